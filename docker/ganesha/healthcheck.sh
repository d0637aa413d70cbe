#!/bin/sh
# Healthy = the mode's daemon listens: sshd (22) in ansible mode, where Ganesha only starts when
# the nfs_server role provisions the SUT; Ganesha (2049) in static mode.
case ${WB_GANESHA_MODE:-ansible} in
  static) port=2049 ;;
  *) port=22 ;;
esac
ss -Hltn "sport = :$port" | grep -q LISTEN
