#!/usr/bin/env bash
# The user plane of the kind cluster (hack/kind.sh), wired on the nodes themselves. kind has no
# Multus, so the software UPF's ports, the gNB emulator's radio and N3, the WiFi access gateway
# and a data network are network namespaces on the core node, and each UE node's 3GPP and WiFi
# interfaces (ran0, wlan0) are VXLAN links to the core node over the cluster's node network.
# Addresses and MACs are config/samples' (test/topology builds the same network for `make run`,
# with veths where this has VXLAN links and bridges). On the core node, namespaces:
#
#   jx-gnb  bridge radio (10.45.0.254/24) holding vxr<i>, the VXLAN link to UE node i's ran0; the
#           gnb-emulator between it and n3g (198.51.100.10) ══ u-n3 of jx-upf (port 1)
#   jx-ap   bridge cell (203.0.113.1/24) holding vxw<i>, the link to UE node i's wlan0, routed
#           to gw-up ══ u-wifi of jx-upf (port 2); for a UE node whose wlan0 is a fixed line
#           (a 5G-RG's), vxw<i> is in bridge line instead, whose packets the W-AGF (the
#           gnb-emulator in its w-agf role, hack/kind/objects/wagf.yaml) carries in GTP-U from
#           203.0.113.2 on gw-up to the UPF's N3 address through the same port
#   jx-dn   dn0 (198.18.0.10, a TCP echo server on port 7) ══ u-n6 of jx-upf (port 3)
#   jx-upf  the software UPF's three ports
#
# On UE node i, in its own network: ran0 (VXLAN 100+i) and wlan0 (VXLAN 200+i), UDP 4790 to the
# core node, with the node's sessions' UE addresses and routes to the UPF through both.
#
# As root on the node (hack/kind.sh: docker exec -i NODE bash -s -- ARGS < hack/kind/dataplane.sh):
#   dataplane.sh core UE_NODE_IP[/line]...        the core node's part; UE node i has the i-th IP,
#                                                 /line: its wlan0 is a fixed line to the W-AGF
#   dataplane.sh line LINE_ADDRS                  core node: the route to each of these UE
#                                                 addresses on a fixed line (comma-separated)
#   dataplane.sh ue CORE_IP I 3GPP_ADDRS WIFI_ADDRS
#                                                 UE node i's part; the sessions' UE addresses on
#                                                 this node, comma-separated ("" for none)
#   dataplane.sh check SESSION_ADDR               UE node: a line through the session to the data
#                                                 network's echo server and back
#   dataplane.sh down                             either node: remove what this script made
# NETNS_PREFIX (default jx-) prefixes the namespaces' names; UNDERLAY (default eth0) is the node's
# interface on the node network.
set -euo pipefail

p=${NETNS_PREFIX:-jx-}
underlay=${UNDERLAY:-eth0}
vxlan_port=4790
dn_host=198.18.0.10
wagf_n3=203.0.113.2 # config/samples: carol's gatewayAddress
echo_port=7

# at NS CMD...: CMD in the namespace NS.
at() { local ns=$1; shift; ip netns exec "$p$ns" "$@"; }

# no_offload NS IFACE...: the UPF's AF_PACKET ports take neither unsegmented nor partially
# checksummed frames, so neither end of its links may offload.
no_offload() {
  local ns=$1 i
  shift
  for i in "$@"; do
    at "$ns" ethtool -K "$i" tso off gso off gro off tx off rx off >/dev/null
  done
}

# no_ipv6 NS|"" IFACE...: no IPv6 on the interfaces (an IPv4 user plane; the UPF would count
# every router solicitation as a drop). Kernels without IPv6 have nothing to turn off.
no_ipv6() {
  local ns=$1 i
  shift
  for i in "$@"; do
    if [[ -n $ns ]]; then
      at "$ns" sysctl -qw "net.ipv6.conf.$i.disable_ipv6=1" 2>/dev/null || true
    else
      sysctl -qw "net.ipv6.conf.$i.disable_ipv6=1" 2>/dev/null || true
    fi
  done
}

# veth NS1 IF1 MAC1 NS2 IF2 MAC2: a veth pair between two namespaces, both ends up.
veth() {
  ip link add "$2" netns "$p$1" address "$3" type veth peer name "$5" netns "$p$4" address "$6"
  at "$1" ip link set "$2" up
  at "$4" ip link set "$5" up
}

core() {
  [[ $# -ge 1 ]] || { echo "core: the UE nodes' IPs are required" >&2; exit 2; }
  local n i ip
  for n in gnb upf ap dn; do
    ip netns add "$p$n"
    at "$n" ip link set lo up
    no_ipv6 "$n" default all
  done
  for n in gnb ap; do # they route between their links
    at "$n" sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
  done

  # gNB ══ N3 ══ UPF port 1; the UPF answers no ARP, so its addresses are static neighbours.
  veth gnb n3g 02:00:00:00:02:01 upf u-n3 02:00:00:00:01:01
  at gnb ip addr add 198.51.100.10/24 dev n3g
  at gnb ip route add 192.0.2.1/32 dev n3g
  at gnb ip neigh replace 192.0.2.1 lladdr 02:00:00:00:01:01 dev n3g nud permanent
  # access gateway ══ UPF port 2: Junction over plain IP from the cell, GTP-U from the W-AGF's
  # address (wagf_n3) to the UPF's N3 address from the lines.
  veth ap gw-up 02:00:00:00:02:02 upf u-wifi 02:00:00:00:01:02
  at ap ip addr add "$wagf_n3/32" dev gw-up
  for a in 192.0.2.1 192.0.2.2; do
    at ap ip route add "$a/32" dev gw-up
    at ap ip neigh replace "$a" lladdr 02:00:00:00:01:02 dev gw-up nud permanent
  done
  # UPF port 3 ══ N6 ══ data network
  veth upf u-n6 02:00:00:00:01:03 dn dn0 02:00:00:00:02:03
  at dn ip addr add "$dn_host/24" dev dn0
  at dn ip neigh replace 198.18.0.1 lladdr 02:00:00:00:01:03 dev dn0 nud permanent
  at dn ip route add 10.60.0.0/16 via 198.18.0.1 dev dn0
  no_offload gnb n3g
  no_offload ap gw-up
  no_offload dn dn0
  no_offload upf u-n3 u-wifi u-n6

  # The radio and the WiFi cell: a bridge each, with every UE node's VXLAN link in it, so any
  # UE address in the subnets is reachable without a route per session.
  at gnb ip link add radio type bridge
  at gnb ip addr add 10.45.0.254/24 dev radio
  at gnb ip link set radio up
  at ap ip link add cell type bridge
  at ap ip addr add 203.0.113.1/24 dev cell
  at ap ip link set cell up
  # The lines: the gateway's address for ARP, a host route per UE address (dataplane.sh line).
  at ap ip link add line type bridge
  at ap ip addr add 203.0.113.1/32 dev line
  at ap ip link set line up
  local access
  i=0
  for ip in "$@"; do
    access=cell
    if [[ $ip == */line ]]; then
      ip=${ip%/line} access=line
    fi
    # Created here, where the node network is; moved, a VXLAN link keeps its socket here.
    ip link add "vxr$i" type vxlan id $((100 + i)) remote "$ip" dstport $vxlan_port dev "$underlay"
    no_ipv6 "" "vxr$i"
    ip link set "vxr$i" netns "${p}gnb"
    at gnb ip link set "vxr$i" master radio up
    ip link add "vxw$i" type vxlan id $((200 + i)) remote "$ip" dstport $vxlan_port dev "$underlay"
    no_ipv6 "" "vxw$i"
    ip link set "vxw$i" netns "${p}ap"
    at ap ip link set "vxw$i" master "$access" up
    i=$((i + 1))
  done

  # The data network's echo server, for check.
  setsid ip netns exec "${p}dn" socat "TCP-LISTEN:$echo_port,reuseaddr,fork" EXEC:cat </dev/null >/dev/null 2>&1 &
}

ue() {
  [[ $# -eq 4 ]] || { echo "ue: CORE_IP I 3GPP_ADDRS WIFI_ADDRS" >&2; exit 2; }
  local core_ip=$1 i=$2 a
  ip link add ran0 type vxlan id $((100 + i)) remote "$core_ip" dstport $vxlan_port dev "$underlay"
  ip link add wlan0 type vxlan id $((200 + i)) remote "$core_ip" dstport $vxlan_port dev "$underlay"
  no_ipv6 "" ran0 wlan0
  for a in ${3//,/ }; do ip addr add "$a/24" dev ran0; done
  for a in ${4//,/ }; do ip addr add "$a/24" dev wlan0; done
  ip link set ran0 up
  ip link set wlan0 up
  # Downlink may arrive on either leg whichever route to the UPF is preferred: loose reverse-path
  # filtering on the legs only, the node's own setting elsewhere.
  sysctl -qw net.ipv4.conf.ran0.rp_filter=2 net.ipv4.conf.wlan0.rp_filter=2
  # The UPF's Junction address through the gNB (preferred, as a cellular default) and the
  # gateway, as a UE's network manager sets them (test/topology: UE.Routes).
  ip route replace 192.0.2.2/32 via 10.45.0.254 dev ran0 metric 10 onlink
  ip route replace 192.0.2.2/32 via 203.0.113.1 dev wlan0 metric 20 onlink
}

line() {
  [[ $# -eq 1 ]] || { echo "line: LINE_ADDRS" >&2; exit 2; }
  local a
  for a in ${1//,/ }; do at ap ip route replace "$a/32" dev line; done
}

check() {
  [[ $# -eq 1 ]] || { echo "check: SESSION_ADDR" >&2; exit 2; }
  local want got
  want="junction through $1"
  got=$(echo "$want" | socat -T 5 - "TCP:$dn_host:$echo_port,bind=$1,connect-timeout=5")
  if [[ $got != "$want" ]]; then
    echo "session $1: sent \"$want\" to $dn_host:$echo_port, got back \"$got\"" >&2
    exit 1
  fi
  echo "session $1: a line went to the data network ($dn_host) and back"
}

down() {
  local n
  for n in gnb upf ap dn; do
    if [[ -e /run/netns/$p$n ]]; then
      ip netns pids "$p$n" | xargs -r kill
      ip netns del "$p$n"
    fi
  done
  ip link del ran0 2>/dev/null || true
  ip link del wlan0 2>/dev/null || true
}

case ${1:-} in
  core | ue | line | check | down)
    cmd=$1
    shift
    "$cmd" "$@" ;;
  *)
    echo "usage: dataplane.sh core|ue|line|check|down ARGS (the comment at the top of hack/kind/dataplane.sh)" >&2
    exit 2 ;;
esac
