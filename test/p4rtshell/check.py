"""Interoperability check: p4runtime-shell (the P4 community's Python client) drives a Junction
P4Runtime target by P4Info names only.

    check.py --grpc-addr 127.0.0.1:9559 --p4info p4/p4info.txtpb [--device-config FILE]

It pushes the pipeline, reads the P4Info back from the target, writes, reads and deletes
`sessions` and `routes` entries with TableEntry, writes and reads a register element and a
usage counter cell, and prints one line per check and "p4rtshell: N passed, M failed". Exit status 1 on any failure.
"""

import argparse
import os
import sys
import tempfile
import traceback

import p4runtime_sh.shell as sh
from p4runtime_sh.context import P4Type
from p4.v1 import p4runtime_pb2

# docs/pipeline.md, "Tables": the names every target exposes.
CONTRACT_TABLES = {
    "local_addresses", "uplink_tunnels", "tunnel_endpoints", "tunnel_peers", "sessions",
    "applications", "session_overrides", "downlink_tunnels", "filters", "routes",
}
CONTRACT_REGISTERS = {
    "rtt_3gpp", "rtt_non3gpp", "path_updates_suspended", "loss_3gpp", "loss_non3gpp",
    "session_seq", "reorder_state", "reorder_deadline",
    "autonomous_share",
}

results = []


def check(name):
    """Runs fn as one named check, recording failures instead of stopping."""
    def wrap(fn):
        try:
            fn()
            results.append((name, None))
            print(f"ok    {name}")
        except Exception as e:  # noqa: BLE001 - any failure of a check is reported
            results.append((name, e))
            print(f"FAIL  {name}: {e}")
            traceback.print_exc(file=sys.stdout)
        return fn
    return wrap


def canonical(b):
    """P4Runtime canonical bytestring: no leading zero bytes, at least one byte."""
    b = b.lstrip(b"\x00")
    return b if b else b"\x00"


def normalized_match(msg):
    out = {}
    for m in msg.match:
        kind = m.WhichOneof("field_match_type")
        v = getattr(m, kind)
        if kind == "exact":
            out[m.field_id] = (kind, canonical(v.value))
        elif kind == "lpm":
            out[m.field_id] = (kind, canonical(v.value), v.prefix_len)
        else:
            out[m.field_id] = (kind, str(v))
    return out


def normalized_action(msg):
    a = msg.action.action
    return a.action_id, {p.param_id: canonical(p.value) for p in a.params}


def read_entries(table):
    return list(sh.TableEntry(table).read())


def register_id(name):
    for r in sh.context.p4info.registers:
        if r.preamble.name == name or r.preamble.alias == name:
            return r.preamble.id
    raise AssertionError(f"register {name} not in the target's P4Info")


def counter_id(name):
    for c in sh.context.p4info.counters:
        if c.preamble.name == name or c.preamble.alias == name:
            return c.preamble.id
    raise AssertionError(f"counter {name} not in the target's P4Info")


def register_entity(name, index):
    e = p4runtime_pb2.Entity()
    e.register_entry.register_id = register_id(name)
    e.register_entry.index.index = index
    return e


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--grpc-addr", required=True)
    ap.add_argument("--p4info", required=True)
    ap.add_argument("--device-config", default="", help="empty for the software UPF")
    ap.add_argument("--device-id", type=int, default=1)
    args = ap.parse_args()

    config = args.device_config
    if not config:
        fd, config = tempfile.mkstemp(prefix="p4rtshell-empty-config-")
        os.close(fd)

    sh.setup(device_id=args.device_id, grpc_addr=args.grpc_addr, election_id=(0, 1),
             config=sh.FwdPipeConfig(args.p4info, config), verbose=False)
    try:
        run_checks()
    finally:
        sh.teardown()
        if not args.device_config:
            os.unlink(config)

    failed = sum(1 for _, e in results if e is not None)
    print(f"p4rtshell: {len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


def run_checks():
    @check("the target returns the pushed P4Info with the contract's tables and registers")
    def _():
        tables = {t.name for t in sh.P4Objects(P4Type.table)}
        missing = CONTRACT_TABLES - tables
        assert not missing, f"tables missing: {sorted(missing)} (have {sorted(tables)})"
        regs = {r.preamble.name for r in sh.context.p4info.registers}
        missing = CONTRACT_REGISTERS - regs
        assert not missing, f"registers missing: {sorted(missing)}"
        assert "probe_reports" in {d.name for d in sh.P4Objects(P4Type.digest)}

    session = sh.TableEntry("sessions")(action="set_session")
    session.match["session_addr"] = "198.18.0.1"
    session.action["user_idx"] = "7"
    session.action["endpoint_idx"] = "1"
    session.action["peer_idx"] = "3"
    session.action["teid"] = "0x200"
    session.action["ue_addr_3gpp"] = "198.18.1.1"
    session.action["ue_addr_non3gpp"] = "198.18.2.1"
    session.action["gateway_non3gpp"] = "192.0.2.20"  # the non-3GPP leg over N3, through a W-AGF
    session.action["teid_non3gpp"] = "0x802"
    session.action["usage_idx"] = "1"

    route = sh.TableEntry("routes")(action="route")
    route.match["dst_addr"] = "203.0.113.0/24"
    route.action["port"] = "2"
    route.action["src_mac"] = "02:00:00:00:01:06"
    route.action["dst_mac"] = "02:00:00:00:02:06"

    @check("insert sessions and routes entries")
    def _():
        session.insert()
        route.insert()

    @check("read them back, match and action as written")
    def _():
        for written, table in ((session, "sessions"), (route, "routes")):
            got = read_entries(table)
            assert len(got) == 1, f"{table}: read {len(got)} entries, want 1"
            g, w = got[0].msg(), written.msg()
            assert normalized_match(g) == normalized_match(w), f"{table} match: got {g.match}, want {w.match}"
            assert normalized_action(g) == normalized_action(w), f"{table} action: got {g.action}, want {w.action}"

    @check("a duplicate insert is refused")
    def _():
        try:
            session.insert()
        except Exception as e:  # noqa: BLE001 - the shell raises its own error types
            assert "ALREADY_EXISTS" in str(e), f"unexpected error: {e}"
            return
        raise AssertionError("duplicate insert succeeded")

    @check("modify an entry's action parameters")
    def _():
        route.action["dst_mac"] = "02:00:00:00:03:06"
        route.modify()
        got = read_entries("routes")
        assert len(got) == 1 and normalized_action(got[0].msg()) == normalized_action(route.msg())

    @check("delete them; the tables read empty")
    def _():
        session.delete()
        route.delete()
        for table in ("sessions", "routes"):
            got = read_entries(table)
            assert not got, f"{table}: {len(got)} entries left after delete"

    @check("write rtt_3gpp[7] = 1500 and read it back")
    def _():
        update = p4runtime_pb2.Update()
        update.type = p4runtime_pb2.Update.MODIFY
        update.entity.CopyFrom(register_entity("rtt_3gpp", 7))
        update.entity.register_entry.data.bitstring = (1500).to_bytes(2, "big")
        sh.client.write_update(update)
        values = []
        for resp in sh.client.read_one(register_entity("rtt_3gpp", 7)):
            for e in resp.entities:
                values.append(int.from_bytes(e.register_entry.data.bitstring, "big"))
        assert values == [1500], f"read {values}, want [1500]"

    @check("write uplink_usage[5] = 3 packets, 300 bytes and read it back")
    def _():
        e = p4runtime_pb2.Entity()
        e.counter_entry.counter_id = counter_id("uplink_usage")
        e.counter_entry.index.index = 5
        update = p4runtime_pb2.Update()
        update.type = p4runtime_pb2.Update.MODIFY
        update.entity.CopyFrom(e)
        update.entity.counter_entry.data.packet_count = 3
        update.entity.counter_entry.data.byte_count = 300
        sh.client.write_update(update)
        cells = []
        for resp in sh.client.read_one(e):
            for x in resp.entities:
                cells.append((x.counter_entry.data.packet_count, x.counter_entry.data.byte_count))
        assert cells == [(3, 300)], f"read {cells}, want [(3, 300)]"

    @check("read the drops counter (every reason, zero packets so far)")
    def _():
        counts = {c.msg().index.index: c.msg().data.packet_count for c in sh.CounterEntry("drops").read()}
        assert counts, "no drops counter cells read"
        assert all(v == 0 for v in counts.values()), f"unexpected drops: {counts}"


if __name__ == "__main__":
    sys.exit(main())
