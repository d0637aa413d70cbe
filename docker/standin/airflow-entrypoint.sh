#!/bin/sh
# Entrypoint of the stand-in Airflow image, as upstream's: the arguments are an airflow command
# (`scheduler`, `celery worker` → `airflow scheduler`, `airflow celery worker`) unless they start
# with a shell, python, airflow or a path, which run as given.
set -eu
case ${1:-} in
  bash | sh | python | python3 | airflow | /*) exec "$@" ;;
  *) exec airflow "$@" ;;
esac
