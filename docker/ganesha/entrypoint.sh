#!/bin/sh
# Entrypoint of the ganesha container; WB_GANESHA_MODE selects who runs the server:
#   ansible (default)  sshd only: playbooks/provision_sut.yml (role nfs_server) makes the disks,
#                      the cgroups and starts Ganesha with its own config under /tmp/workbench.
#   static             rpcbind + Ganesha in the foreground with /etc/ganesha/ganesha.conf
#                      (/export over NFSv3); no sshd, so the harness cannot provision it.
# The two are exclusive: both want port 2049.
set -eu
mode=${WB_GANESHA_MODE:-ansible}
case $mode in
  ansible)
    exec /usr/local/bin/wb-ssh-entrypoint /usr/sbin/sshd -D -e
    ;;
  static)
    mkdir -p /run/rpcbind /run/ganesha /var/lib/nfs/ganesha /export
    rpcbind -w
    exec ganesha.nfsd -F -L /dev/stdout -f /etc/ganesha/ganesha.conf -N NIV_EVENT
    ;;
  *)
    echo "wb-ganesha-entrypoint: WB_GANESHA_MODE must be ansible or static, got '$mode'" >&2
    exit 2
    ;;
esac
