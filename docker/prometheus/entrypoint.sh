#!/bin/sh
# The prometheus service (docker/prometheus.Dockerfile): the node exporter on 127.0.0.1:9100 with a
# few collectors, then Prometheus in the foreground with the mounted monitoring/prometheus/.
set -eu
conf=/etc/prometheus/workbench
prometheus-node-exporter --web.listen-address=127.0.0.1:9100 --collector.disable-defaults \
  --collector.cpu --collector.meminfo --collector.diskstats --collector.netdev --collector.loadavg &
exec prometheus --config.file="$conf/compose/prometheus.yml" --storage.tsdb.path=/prometheus \
  --storage.tsdb.retention.time=7d --web.listen-address=0.0.0.0:9090 \
  --web.console.templates="$conf/consoles" --web.console.libraries="$conf/console_libraries" "$@"
