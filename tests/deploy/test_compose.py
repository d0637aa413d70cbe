"""docker-compose.yml and docker/: what can be checked on a machine without a Docker engine.

The real Compose CLI (bin/docker-compose, built by `make compose` from a pinned Go module) parses,
interpolates and validates the file; the tests read its resolved JSON. docker/airflow/init.sh
runs against the real Airflow of the venv (SQLite); docker/ganesha/ganesha.conf is served by the
real Ganesha of this machine. Image builds and running containers are not tested here
(docs/docker.md).
"""
from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "bin" / "docker-compose"
COMPOSE_FILE = REPO / "docker-compose.yml"
ENV_EXAMPLE = REPO / "docker" / "env.example"
INIT_SH = REPO / "docker" / "airflow" / "init.sh"
MINIO_VERSION = "v0.0.0-20260212201848-7aac2a2c5b7c"   # the contract's pinned MinIO module version

AIRFLOW_SERVICES = {"airflow-init", "airflow-apiserver", "airflow-scheduler", "airflow-dag-processor",
                    "airflow-triggerer", "airflow-worker"}
SERVICES = AIRFLOW_SERVICES | {"postgres", "redis", "minio", "ganesha", "loadgen", "prometheus"}
COMMANDS = {"airflow-apiserver": ["api-server"], "airflow-scheduler": ["scheduler"],
            "airflow-dag-processor": ["dag-processor"], "airflow-triggerer": ["triggerer"],
            "airflow-worker": ["celery", "worker"]}


def _compose_bin() -> Path:
    assert COMPOSE.is_file() and os.access(COMPOSE, os.X_OK), (
        f"{COMPOSE} is missing: build it with `make compose` (make test does)")
    return COMPOSE


def _clean_env(tmp: Path) -> dict[str, str]:
    # No inherited POSTGRES_PASSWORD & co., no ~/.docker of the user.
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp)}


def run_compose(env_file: Path, *args: str) -> subprocess.CompletedProcess:
    """`docker-compose -f docker-compose.yml --env-file ENV_FILE ARGS...` (no engine needed)."""
    return subprocess.run([str(_compose_bin()), "-f", str(COMPOSE_FILE), "--project-directory", str(REPO),
                           "--env-file", str(env_file), *args],
                          capture_output=True, text=True, timeout=120, env=_clean_env(env_file.parent))


def example_env() -> dict[str, str]:
    """docker/env.example with every CHANGE-ME replaced by a fresh random value."""
    values = {}
    for line in ENV_EXAMPLE.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, _, value = line.partition("=")
        values[key] = secrets.token_urlsafe(16) if value == "CHANGE-ME" else value
    return values


def write_env(path: Path, values: dict[str, str]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
    return path


@pytest.fixture(scope="module")
def env_values() -> dict[str, str]:
    return example_env()


@pytest.fixture(scope="module")
def config(tmp_path_factory, env_values) -> dict:
    env_file = write_env(tmp_path_factory.mktemp("compose") / ".env", env_values)
    quiet = run_compose(env_file, "config", "--quiet")
    assert quiet.returncode == 0, f"docker compose config --quiet failed:\n{quiet.stderr}"
    out = run_compose(env_file, "config", "--format", "json")
    assert out.returncode == 0, f"docker compose config --format json failed:\n{out.stderr}"
    return json.loads(out.stdout)


def image_tag(ref: str) -> str:
    """The tag of an image reference ('' when none): name[:tag][@digest]."""
    ref = ref.split("@", 1)[0]
    last = ref.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else ""


def dockerfile_of(service: dict) -> Path:
    build = service["build"]
    return Path(build["context"]) / build.get("dockerfile", "Dockerfile")


def _ignored(dockerfile: Path, src: str) -> bool:
    """Whether an allow-list style <Dockerfile>.dockerignore ("*" then "!path" lines) drops `src`."""
    ignore = dockerfile.with_name(dockerfile.name + ".dockerignore")
    if not ignore.is_file():
        return False
    lines = [ln.strip() for ln in ignore.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    if "*" not in lines:
        return any(src == ln or src.startswith(ln.rstrip("/") + "/") for ln in lines)
    allowed = [ln[1:].rstrip("/") for ln in lines if ln.startswith("!")]
    return not any(src == a or src.startswith(a + "/") for a in allowed)


def test_services_exist(config):
    assert set(config["services"]) == SERVICES


def test_airflow_runs_celery_executor_with_every_component(config):
    for name in AIRFLOW_SERVICES:
        env = config["services"][name]["environment"]
        assert env["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor", name
        assert env["AIRFLOW__CELERY__BROKER_URL"].startswith("redis://:") and env["AIRFLOW__CELERY__BROKER_URL"].endswith("@redis:6379/0"), name
        assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("postgresql+psycopg2://"), name
        assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == "http://airflow-apiserver:8080/execution/"
    for name, command in COMMANDS.items():
        assert config["services"][name]["command"] == command, name
    assert config["services"]["airflow-init"]["command"] == ["bash", "/opt/workbench/docker/airflow/init.sh"]


def test_credentials_come_from_the_env_file(config, env_values):
    worker = config["services"]["airflow-worker"]["environment"]
    assert worker["WB_S3_ENDPOINT"] == "minio:9000"
    assert worker["WB_S3_ACCESS_KEY"] == env_values["MINIO_ROOT_USER"]
    assert worker["WB_S3_SECRET_KEY"] == env_values["MINIO_ROOT_PASSWORD"]
    assert worker["AIRFLOW__CORE__FERNET_KEY"] == env_values["AIRFLOW_FERNET_KEY"]
    assert f":{env_values['POSTGRES_PASSWORD']}@postgres:5432/" in worker["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]
    assert config["services"]["minio"]["environment"]["MINIO_ROOT_PASSWORD"] == env_values["MINIO_ROOT_PASSWORD"]
    assert config["services"]["postgres"]["environment"]["POSTGRES_PASSWORD"] == env_values["POSTGRES_PASSWORD"]
    assert config["services"]["airflow-init"]["environment"]["AIRFLOW_ADMIN_PASSWORD"] == env_values["AIRFLOW_ADMIN_PASSWORD"]
    # issue 53: the broker asks for a password, which is not on redis-server's command line
    redis = config["services"]["redis"]
    assert worker["AIRFLOW__CELERY__BROKER_URL"] == f"redis://:{env_values['REDIS_PASSWORD']}@redis:6379/0"
    assert redis["environment"]["REDIS_PASSWORD"] == env_values["REDIS_PASSWORD"] and redis["user"] == "redis"
    assert "requirepass %s" in redis["command"][-1] and env_values["REDIS_PASSWORD"] not in " ".join(redis["command"])
    assert "REDISCLI_AUTH" in redis["healthcheck"]["test"][-1]


def test_every_image_tag_is_pinned(config):
    for name, service in config["services"].items():
        tag = image_tag(service["image"])
        assert tag and tag != "latest", f"service {name}: image {service['image']!r} has no pinned tag"


def dockerfile_bases(text: str) -> list[str]:
    """The base images of a Dockerfile's stages, `FROM ${ARG}` resolved to the ARG's default;
    stages built on an earlier stage are left out."""
    defaults = dict(re.findall(r"^ARG\s+(\w+)=(\S+)\s*$", text.split("\nFROM ", 1)[0], flags=re.M))
    stages = re.findall(r"^FROM\s+\S+\s+AS\s+(\S+)", text, flags=re.M | re.I)
    bases = []
    for base in re.findall(r"^FROM\s+(\S+)", text, flags=re.M | re.I):
        m = re.fullmatch(r"\$\{?(\w+)\}?", base)
        if m:
            assert m.group(1) in defaults, f"FROM {base}: no ARG {m.group(1)}=<default> before the first FROM"
            base = defaults[m.group(1)]
        if base not in stages:
            bases.append(base)
    return bases


def test_dockerfiles_exist_and_pin_their_base_images(config):
    built = {name: s for name, s in config["services"].items() if "build" in s}
    assert set(built) >= {"minio", "ganesha", "loadgen"} | AIRFLOW_SERVICES
    for name, service in built.items():
        dockerfile = dockerfile_of(service)
        assert dockerfile.is_file(), f"service {name}: {dockerfile} does not exist"
        text = dockerfile.read_text()
        for base in dockerfile_bases(text):
            tag = image_tag(base)
            assert tag and tag != "latest" and "$" not in base, f"{dockerfile}: base image {base} is not pinned"
        # every COPY source (not from a stage) exists in the build context
        context = Path(service["build"]["context"])
        for args in re.findall(r"^COPY\s+(.+)$", text, flags=re.M):
            words = [w for w in args.split() if not w.startswith("--")]
            if "--from=" in args:
                continue
            for src in words[:-1]:
                assert (context / src).exists(), f"{dockerfile}: COPY source {src} missing"
                assert not _ignored(dockerfile, src), f"{dockerfile}: COPY source {src} is excluded by its .dockerignore"


UPSTREAM = {"GOLANG_BASE": "golang:1.26.8-bookworm", "DEBIAN_BASE": "debian:12.12-slim",
            "AIRFLOW_BASE": "apache/airflow:3.3.2-python3.11"}
STAND_INS = {"WB_DEBIAN_BASE": "localhost/wb-debian:bookworm",
             "WB_GOLANG_BASE": "localhost/wb-standin-golang:1.26.8-bookworm",
             "WB_AIRFLOW_BASE": "localhost/wb-standin-airflow:bookworm",
             "WB_POSTGRES_IMAGE": "localhost/wb-standin-postgres:bookworm",
             "WB_REDIS_IMAGE": "localhost/wb-standin-redis:bookworm"}


def test_base_images_default_to_upstream(config):
    """Without WB_*_BASE / WB_*_IMAGE (a user's .env) compose passes the upstream images, the same
    as each Dockerfile's ARG default; every base ARG of a Dockerfile is passed by compose."""
    for name, service in config["services"].items():
        if "build" not in service:
            continue
        text = dockerfile_of(service).read_text()
        defaults = dict(re.findall(r"^ARG\s+(\w+_BASE)=(\S+)\s*$", text, flags=re.M))
        assert defaults and set(defaults) <= set(UPSTREAM), f"{name}: base ARGs {defaults}"
        assert {k: UPSTREAM[k] for k in defaults} == defaults, name
        args = service["build"].get("args") or {}
        assert {k: v for k, v in args.items() if k.endswith("_BASE")} == defaults, name
    assert config["services"]["postgres"]["image"] == "postgres:16.10-bookworm"
    assert config["services"]["redis"]["image"] == "redis:7.4.5-bookworm"


def test_stand_ins_replace_every_upstream_image(tmp_path, env_values):
    """make test-compose's variables swap every upstream image for a local one, and the Podman
    override (docker/standin/compose.podman.yml) keeps a valid file with the fixed addresses."""
    env_file = write_env(tmp_path / ".env", {**env_values, **STAND_INS})
    out = subprocess.run([str(_compose_bin()), "-f", str(COMPOSE_FILE),
                          "-f", str(REPO / "docker" / "standin" / "compose.podman.yml"),
                          "--project-directory", str(REPO), "--env-file", str(env_file), "config", "--format", "json"],
                         capture_output=True, text=True, timeout=120, env=_clean_env(tmp_path))
    assert out.returncode == 0, out.stderr
    cfg = json.loads(out.stdout)
    for name, service in cfg["services"].items():
        refs = list((service["build"].get("args") or {}).values()) if "build" in service else [service["image"]]
        assert refs and all(r.startswith("localhost/") for r in refs), f"{name}: {refs}"
    assert cfg["networks"]["wb"]["ipam"]["config"] == [{"subnet": "10.252.0.0/24"}]
    assert cfg["services"]["ganesha"]["networks"]["wb"]["ipv4_address"] == "10.252.0.10"
    for script in ("test-compose.sh", "install-podman.sh"):
        assert subprocess.run(["bash", "-n", str(REPO / "scripts" / script)]).returncode == 0, script


def test_airflow_image_matches_the_lock(config):
    text = (REPO / "docker" / "airflow.Dockerfile").read_text()
    assert re.search(r"^ARG AIRFLOW_BASE=apache/airflow:3\.3\.2-python3\.11$", text, flags=re.M)
    assert re.search(r"^FROM \$\{AIRFLOW_BASE\}$", text, flags=re.M)
    assert "apache-airflow==3.3.2" in (REPO / "requirements.lock").read_text().splitlines()
    assert "requirements.lock" in text and "pip install --no-cache-dir --no-deps -e /opt/workbench" in text


def test_minio_is_built_from_the_pinned_module_version(config):
    text = (REPO / "docker" / "minio.Dockerfile").read_text()
    assert f"ARG MINIO_VERSION={MINIO_VERSION}" in text
    assert config["services"]["minio"]["image"].endswith(":" + MINIO_VERSION)
    makefile = (REPO / "Makefile").read_text()
    pins = set(re.findall(r"github\.com/minio/minio@(v[0-9A-Za-z.\-]+)", makefile))
    assert pins <= {MINIO_VERSION}, f"Makefile pins MinIO {pins}, docker/minio.Dockerfile {MINIO_VERSION}"


def test_healthchecks_and_start_order(config):
    services = config["services"]
    for name, service in services.items():
        if name == "airflow-init":
            continue
        test = service.get("healthcheck", {}).get("test")
        assert test and test[0] in ("CMD", "CMD-SHELL"), f"service {name} has no healthcheck"
    assert services["airflow-init"]["restart"] == "no"
    assert services["airflow-init"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name in AIRFLOW_SERVICES - {"airflow-init"}:
        deps = services[name]["depends_on"]
        assert deps["postgres"]["condition"] == "service_healthy", name
        assert deps["redis"]["condition"] == "service_healthy", name
        assert deps["airflow-init"]["condition"] == "service_completed_successfully", name
    for name in ("airflow-scheduler", "airflow-dag-processor", "airflow-triggerer", "airflow-worker"):
        assert services[name]["depends_on"]["airflow-apiserver"]["condition"] == "service_healthy", name
    for dep in ("minio", "ganesha", "loadgen"):
        assert services["airflow-worker"]["depends_on"][dep]["condition"] == "service_healthy"


def test_volumes_for_dags_plugins_src_logs(config):
    for name in AIRFLOW_SERVICES - {"airflow-init"}:
        mounts = {v["target"]: v for v in config["services"][name]["volumes"]}
        assert mounts["/opt/workbench/dags"]["type"] == "bind"
        assert Path(mounts["/opt/workbench/dags"]["source"]) == REPO / "dags"
        assert Path(mounts["/opt/workbench/src"]["source"]) == REPO / "src"
        assert Path(mounts["/opt/workbench/plugins"]["source"]) == REPO / "plugins"     # the "Why λ*" tab
        assert config["services"][name]["environment"]["AIRFLOW__CORE__PLUGINS_FOLDER"] == "/opt/workbench/plugins"
        assert mounts["/opt/airflow/logs"]["type"] == "volume"
        assert mounts["/opt/workbench-ssh"]["source"] == "wb-ssh"


def test_prometheus_scrapes_the_workers_live_endpoints(config):
    """The live view: monitoring/prometheus/ mounted (its compose config names the worker's endpoints,
    tests/measure/test_live.py), the worker's endpoints on the stack's network, the UI on 127.0.0.1 only."""
    prom = config["services"]["prometheus"]
    mounts = {v["target"]: v for v in prom["volumes"]}
    assert Path(mounts["/etc/prometheus/workbench"]["source"]) == REPO / "monitoring" / "prometheus"
    assert mounts["/etc/prometheus/workbench"]["read_only"] is True
    assert [(p["host_ip"], p["target"]) for p in prom["ports"]] == [("127.0.0.1", 9090)]
    assert config["services"]["airflow-worker"]["environment"]["WB_METRICS_ADDR"] == "0.0.0.0"
    entry = (REPO / "docker" / "prometheus" / "entrypoint.sh").read_text()
    assert "conf=/etc/prometheus/workbench\n" in entry and '--config.file="$conf/compose/prometheus.yml"' in entry


def test_inventory_matches_the_compose_network(config):
    inv = yaml.safe_load((REPO / "inventory" / "compose" / "hosts.yml").read_text())
    allvars = inv["all"]["vars"]
    assert allvars["wb_netns"] == "" and allvars["ansible_connection"] == "ssh"
    slot = inv["all"]["children"]["slot1"]["hosts"]
    assert set(inv["all"]["children"]["sut"]["hosts"]) == {"sut1"}
    assert set(inv["all"]["children"]["loadgen"]["hosts"]) == {"load1"}
    services = config["services"]
    for host, service in (("sut1", "ganesha"), ("load1", "loadgen")):
        assert slot[host]["ansible_host"] == service
        assert services[service]["networks"]["wb"]["ipv4_address"] == slot[host]["wb_addr"], host
        mounts = {v["target"]: v["source"] for v in services[service]["volumes"]}
        assert mounts["/keys"] == "wb-ssh", f"{service} cannot read Ansible's public key"
    assert slot["load1"]["wb_sut_addr"] == slot["sut1"]["wb_addr"]
    assert allvars["ansible_ssh_private_key_file"].startswith("/opt/workbench-ssh/")
    worker_env = services["airflow-worker"]["environment"]
    assert worker_env["WB_INVENTORY"] == "/opt/workbench/inventory/compose/hosts.yml"
    assert services["ganesha"]["privileged"] is True


def test_every_required_variable_is_in_env_example():
    required = set(re.findall(r"\$\{([A-Z0-9_]+):\?", COMPOSE_FILE.read_text()))
    assert required, "docker-compose.yml has no required variables"
    assert required <= set(example_env()), f"not in docker/env.example: {required - set(example_env())}"


def test_without_env_compose_fails_naming_the_variable(tmp_path):
    result = run_compose(write_env(tmp_path / "empty.env", {}), "config", "--quiet")
    assert result.returncode != 0
    assert "required variable POSTGRES_PASSWORD is missing a value" in result.stderr
    assert "docker/env.example" in result.stderr


def test_one_missing_variable_is_named_alone(tmp_path):
    values = example_env()
    del values["AIRFLOW_FERNET_KEY"]
    result = run_compose(write_env(tmp_path / "partial.env", values), "config", "--quiet")
    assert result.returncode != 0
    named = set(re.findall(r"required variable (\w+) is missing", result.stderr))
    assert named == {"AIRFLOW_FERNET_KEY"}, result.stderr


def test_shell_scripts_parse():
    for script in sorted((REPO / "docker").rglob("*.sh")):
        shell = "bash" if script.read_text().startswith("#!/usr/bin/env bash") else "sh"
        result = subprocess.run([shell, "-n", str(script)], capture_output=True, text=True)
        assert result.returncode == 0, f"{script}: {result.stderr}"
        assert os.access(script, os.X_OK), f"{script} is not executable"


def _init_env(tmp: Path, **extra: str) -> dict[str, str]:
    venv_bin = str(Path(sys.executable).parent)
    env = {"PATH": f"{venv_bin}:/usr/bin:/bin", "HOME": str(tmp), "AIRFLOW_HOME": str(tmp / "airflow"),
           "AIRFLOW__CORE__LOAD_EXAMPLES": "false", "AIRFLOW_ADMIN_USER": "admin",
           "AIRFLOW_ADMIN_PASSWORD": "pw-" + secrets.token_hex(4),
           "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(tmp / "passwords.json"),
           "WB_S3_ENDPOINT": "minio:9000", "WB_S3_ACCESS_KEY": "ak", "WB_S3_SECRET_KEY": "sk-secret",
           "WB_S3_BUCKET": "workbench", "WB_SUT_SLOTS": "2", "WB_SSH_DIR": str(tmp / "ssh")}
    env.update(extra)
    (tmp / "ssh").mkdir(exist_ok=True)
    return env


def _airflow_json(env: dict[str, str], *args: str):
    out = subprocess.run(["airflow", *args, "-o", "json"], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout[out.stdout.index("["):])


def test_init_script_sets_up_a_real_airflow(tmp_path):
    """docker/airflow/init.sh against the venv's Airflow 3.3.2 (SQLite): twice, idempotent."""
    env = _init_env(tmp_path)
    for attempt in (1, 2):
        run = subprocess.run(["bash", str(INIT_SH)], capture_output=True, text=True, env=env, timeout=300)
        assert run.returncode == 0, f"run {attempt}:\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}"
    pool, = _airflow_json(env, "pools", "get", "workbench_sut")
    assert int(pool["slots"]) == 2
    conn, = _airflow_json(env, "connections", "get", "workbench_s3")
    assert (conn["host"], str(conn["port"]), conn["login"], conn["password"]) == ("minio", "9000", "ak", "sk-secret")
    extra = parse_qs(urlsplit(conn["get_uri"]).query)["__extra__"][0]
    assert json.loads(extra) == {"bucket": "workbench", "secure": False}
    assert json.loads((tmp_path / "passwords.json").read_text()) == {"admin": env["AIRFLOW_ADMIN_PASSWORD"]}
    key = tmp_path / "ssh" / "id_ed25519"
    assert key.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "ssh" / "id_ed25519.pub").read_text().startswith("ssh-ed25519 ")


def test_init_script_names_missing_variables(tmp_path):
    env = _init_env(tmp_path)
    del env["WB_S3_SECRET_KEY"], env["AIRFLOW_ADMIN_PASSWORD"]
    run = subprocess.run(["bash", str(INIT_SH)], capture_output=True, text=True, env=env, timeout=60)
    assert run.returncode == 2
    assert "missing environment variable(s): AIRFLOW_ADMIN_PASSWORD WB_S3_SECRET_KEY" in run.stderr
    assert not (tmp_path / "airflow" / "airflow.db").exists(), "init touched the database before checking"


def test_init_script_rejects_a_bad_slot_count(tmp_path):
    run = subprocess.run(["bash", str(INIT_SH)], capture_output=True, text=True,
                         env=_init_env(tmp_path, WB_SUT_SLOTS="0"), timeout=60)
    assert run.returncode == 2 and "WB_SUT_SLOTS must be a positive integer, got '0'" in run.stderr


def _netns_down(ns: str) -> None:
    """Stop what this test started in namespace `ns` (Ganesha, its rpcbind), then delete it."""
    for sig in ("-TERM", "-KILL"):
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
        if not pids:
            break
        subprocess.run(["kill", sig, *pids], capture_output=True)
        for _ in range(50):
            if not subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split():
                break
            time.sleep(0.1)
    subprocess.run(["ip", "netns", "del", ns], capture_output=True)


@pytest.mark.integration
def test_static_ganesha_conf_serves_nfsv3_and_nfsv41(tmp_path, fstress_bin):
    """docker/ganesha/ganesha.conf run the way the static entrypoint runs it (rpcbind -w, then its
    `ganesha.nfsd` line), in a network namespace with a private /run as the container would have;
    only the export and recovery paths move to a temp dir. fstress builds a file set and runs, over
    NFSv3 and then over NFSv4.1 (the pseudo path, no MOUNT)."""
    text = (REPO / "docker" / "ganesha" / "ganesha.conf").read_text()
    assert "  Path = /export;" in text and "RecoveryRoot = /var/lib/nfs/ganesha;" in text
    export, recovery = tmp_path / "export", tmp_path / "recovery"
    export.mkdir()
    recovery.mkdir()
    conf = tmp_path / "ganesha.conf"
    conf.write_text(text.replace("  Path = /export;", f"  Path = {export};")
                    .replace("RecoveryRoot = /var/lib/nfs/ganesha;", f"RecoveryRoot = {recovery};"))
    entry = (REPO / "docker" / "ganesha" / "entrypoint.sh").read_text()
    assert "    rpcbind -w\n" in entry
    line = re.search(r"^\s*exec (ganesha\.nfsd .*)$", entry, flags=re.M).group(1)
    argv = line.replace("/etc/ganesha/ganesha.conf", str(conf)).split()
    ns = f"wb-dk{os.getpid() % 100000}"
    _netns_down(ns)
    subprocess.run(["ip", "netns", "add", ns], check=True)
    out = tmp_path / "ganesha.out"
    try:
        subprocess.run(["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"], check=True)
        with out.open("w") as log:
            proc = subprocess.Popen(
                ["ip", "netns", "exec", ns, "unshare", "--mount", "--propagation", "private", "sh", "-c",
                 'mount -t tmpfs wb-run /run && mkdir -p /run/rpcbind /run/ganesha && rpcbind -w && exec "$@"',
                 "sh", *argv], stdout=log, stderr=subprocess.STDOUT)
        for _ in range(100):
            ss = subprocess.run(["ip", "netns", "exec", ns, "ss", "-Hltn", "sport = :2049"],
                                capture_output=True, text=True).stdout
            if "LISTEN" in ss:
                break
            assert proc.poll() is None, f"Ganesha exited:\n{out.read_text()[-2000:]}"
            time.sleep(0.2)
        else:
            pytest.fail(f"Ganesha did not listen on 2049 within 20 s:\n{out.read_text()[-2000:]}")
        conn = ["--server", "127.0.0.1:2049", "--mount-port", "20048", "--export", "/export"]
        fs = subprocess.run(["ip", "netns", "exec", ns, str(fstress_bin), "fileset", *conn,
                             "--workload", "web_server", "--rate", "100"], capture_output=True, text=True, timeout=120)
        assert fs.returncode == 0, fs.stderr
        result = tmp_path / "trial.json"
        run = subprocess.run(["ip", "netns", "exec", ns, str(fstress_bin), "run", *conn, "--workload", "web_server",
                              "--rate", "100", "--fileset-rate", "100", "--duration", "2", "--warmup", "0.5",
                              "--json", str(result)], capture_output=True, text=True, timeout=120)
        # exit 3 = generator saturated (send lag on a busy machine): still a complete result
        assert run.returncode in (0, 3), run.stderr
        trial = json.loads(result.read_text())
        assert trial["ops_total"] >= 150 and trial["errors"] == 0 and trial["timeouts"] == 0
        assert any(export.iterdir()), "the file set is not in the exported directory"
        run = subprocess.run(["ip", "netns", "exec", ns, str(fstress_bin), "run", "--server", "127.0.0.1:2049",
                              "--export", "/export", "--nfs-version", "4.1", "--workload", "web_server",
                              "--rate", "100", "--fileset-rate", "100", "--duration", "2", "--warmup", "0.5",
                              "--json", str(result)], capture_output=True, text=True, timeout=120)
        assert run.returncode in (0, 3), run.stderr
        trial = json.loads(result.read_text())
        assert trial["nfs_version"] == "4.1" and trial["ops_total"] >= 150 and trial["errors"] == 0, trial
        assert "NFS SERVER INITIALIZED" in out.read_text(), "Ganesha's log did not reach stdout (-L /dev/stdout)"
    finally:
        _netns_down(ns)


@pytest.mark.parametrize("playbook, hosts", [("provision_sut.yml", ["sut1"]), ("deploy_loadgen.yml", ["load1"])])
def test_playbooks_select_the_compose_hosts(playbook, hosts):
    """The harness's playbooks (-e slot=slot1) pick the ganesha / loadgen hosts of the compose inventory."""
    out = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "--list-hosts",
                          "-i", str(REPO / "inventory" / "compose" / "hosts.yml"),
                          str(REPO / "playbooks" / playbook), "-e", "slot=slot1"],
                         capture_output=True, text=True, timeout=120, cwd=REPO,
                         env={**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg")})
    assert out.returncode == 0, out.stderr
    listed = re.findall(r"hosts \(\d+\):\n((?:\s{6}\S+\n?)+)", out.stdout)
    # play 1 (check_slot.yml) checks the slot on the controller
    assert [h.split() for h in listed] == [["localhost"], hosts], out.stdout
