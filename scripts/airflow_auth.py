#!/usr/bin/env python3
"""The Airflow login of ui.sh, celery-stack.sh and the tests (SimpleAuthManager, no FAB).

Two users: `admin` (role admin: trigger, pause, clear, edit) and `viewer` (role viewer: read
only). Their passwords are generated at first start into a JSON file of mode 0600 -
{"admin": "...", "viewer": "..."}, Airflow's [core] simple_auth_manager_passwords_file - and never
printed: the scripts print only where the file is. The file is made before Airflow starts, so the
api-server finds both users and never generates (and prints) a password itself.

    airflow_auth.py passwords FILE          make FILE (or add a missing user; mode 0600); no output
    airflow_auth.py env FILE                the AIRFLOW__CORE__* lines that use FILE
    airflow_auth.py token URL FILE [USER]   a JWT for USER (default admin) from URL/auth/token

A REST API call then sends `Authorization: Bearer <token>` (valid 24 h, [api_auth]
jwt_expiration_time). Standard library only; tests/airflow_live.py imports it.
"""
from __future__ import annotations

import json
import os
import secrets
import sys
import tempfile
import urllib.request

USERS = {"admin": "admin", "viewer": "viewer"}     # user name: SimpleAuthManager role


def env(path: str) -> dict[str, str]:
    """Airflow's configuration for these users (overrides an inherited all-admins setting)."""
    return {
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": ",".join(f"{u}:{r}" for u, r in USERS.items()),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(path),
    }


def ensure_passwords(path: str) -> None:
    """Make the passwords file (mode 0600) with a generated password for every user it lacks;
    keep the passwords it has."""
    path = os.fspath(path)
    if os.path.islink(path):
        raise SystemExit(f"refusing passwords file {path}: it is a symbolic link")
    try:
        with open(path) as f:
            have = json.loads(f.read().strip() or "{}")
    except FileNotFoundError:
        have = {}
    if not isinstance(have, dict):
        raise SystemExit(f"{path}: not a JSON object of user: password")
    missing = [u for u in USERS if not have.get(u)]
    if missing:
        have.update({u: secrets.token_urlsafe(18) for u in missing})
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".passwords.")
        try:
            with os.fdopen(fd, "w") as f:          # mkstemp: mode 0600 from the start
                f.write(json.dumps(have) + "\n")
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    os.chmod(path, 0o600)


def password(path: str, user: str = "admin") -> str:
    with open(path) as f:
        return json.load(f)[user]


def token(base_url: str, path: str, user: str = "admin", timeout_s: float = 10) -> str:
    """A JWT for `user` from the api-server (POST /auth/token with the user's password)."""
    body = json.dumps({"username": user, "password": password(path, user)}).encode()
    req = urllib.request.Request(f"{base_url.rstrip('/')}/auth/token", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout_s) as resp:
        return json.load(resp)["access_token"]


def ui_login(driver, base_url: str, path: str, user: str = "admin", timeout_s: float = 30) -> None:
    """Log a Selenium browser in through the simple auth manager's login page."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait
    wait = WebDriverWait(driver, timeout_s)
    driver.get(f"{base_url.rstrip('/')}/auth/login")
    wait.until(EC.presence_of_element_located((By.NAME, "username"))).send_keys(user)
    driver.find_element(By.NAME, "password").send_keys(password(path, user))
    driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait.until(lambda d: "/auth/login" not in d.current_url, f"the login of {user} was not accepted")


def main(argv: list[str]) -> int:
    usage = __doc__.split("\n\n")[2]
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__.rstrip())
        return 0
    if len(argv) == 2 and argv[0] == "passwords":
        ensure_passwords(argv[1])
    elif len(argv) == 2 and argv[0] == "env":
        print("\n".join(f"{k}={v}" for k, v in env(argv[1]).items()))
    elif len(argv) in (3, 4) and argv[0] == "token":
        print(token(*argv[1:]))
    else:
        print(usage, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
