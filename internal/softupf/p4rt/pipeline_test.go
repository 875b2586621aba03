package p4rt

import (
	"context"
	"errors"
	"strings"
	"testing"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

func (h *harness) setConfig(action p4v1.SetForwardingPipelineConfigRequest_Action, election uint64, cfg *p4v1.ForwardingPipelineConfig) error {
	_, err := h.client.SetForwardingPipelineConfig(context.Background(), &p4v1.SetForwardingPipelineConfigRequest{
		DeviceId: testDevice, ElectionId: eid(election), Action: action, Config: cfg})
	return err
}

func (h *harness) getConfig(rt p4v1.GetForwardingPipelineConfigRequest_ResponseType) *p4v1.ForwardingPipelineConfig {
	h.t.Helper()
	r, err := h.client.GetForwardingPipelineConfig(context.Background(), &p4v1.GetForwardingPipelineConfigRequest{DeviceId: testDevice, ResponseType: rt})
	if err != nil {
		h.t.Fatal(err)
	}
	return r.Config
}

func cfgOf(info *p4configv1.P4Info, dev string, cookie uint64) *p4v1.ForwardingPipelineConfig {
	return &p4v1.ForwardingPipelineConfig{P4Info: info, P4DeviceConfig: []byte(dev), Cookie: &p4v1.ForwardingPipelineConfig_Cookie{Cookie: cookie}}
}

const (
	verifyAndCommit = p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT
	verifyAndSave   = p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_SAVE
	commitSaved     = p4v1.SetForwardingPipelineConfigRequest_COMMIT
	reconcile       = p4v1.SetForwardingPipelineConfigRequest_RECONCILE_AND_COMMIT
)

func TestPipelineConfigKeepsCookieForEveryResponseType(t *testing.T) {
	h := newHarness(t, Options{})
	h.primary(1)
	if cfg := h.getConfig(p4v1.GetForwardingPipelineConfigRequest_ALL); cfg != nil {
		t.Fatalf("config before any was set: %v", cfg)
	}
	info := testP4Info()
	if err := h.setConfig(verifyAndCommit, 1, cfgOf(info, "dev-config", 42)); err != nil {
		t.Fatal(err)
	}
	if c := h.target.callsOf("check"); len(c) != 1 || string(c[0].data) != "dev-config" {
		t.Fatalf("CheckPipeline calls %+v", c)
	}
	if c := h.target.callsOf("commit"); len(c) != 1 {
		t.Fatalf("CommitPipeline calls %+v", c)
	}
	all := h.getConfig(p4v1.GetForwardingPipelineConfigRequest_ALL)
	if !proto.Equal(all.P4Info, info) || string(all.P4DeviceConfig) != "dev-config" || all.Cookie.GetCookie() != 42 {
		t.Fatalf("ALL: %v", all)
	}
	if c := h.getConfig(p4v1.GetForwardingPipelineConfigRequest_COOKIE_ONLY); c.P4Info != nil || c.P4DeviceConfig != nil || c.Cookie.GetCookie() != 42 {
		t.Fatalf("COOKIE_ONLY: %v", c)
	}
	if c := h.getConfig(p4v1.GetForwardingPipelineConfigRequest_P4INFO_AND_COOKIE); c.P4Info == nil || c.P4DeviceConfig != nil || c.Cookie.GetCookie() != 42 {
		t.Fatalf("P4INFO_AND_COOKIE: %v", c)
	}
	if c := h.getConfig(p4v1.GetForwardingPipelineConfigRequest_DEVICE_CONFIG_AND_COOKIE); c.P4Info != nil || string(c.P4DeviceConfig) != "dev-config" || c.Cookie.GetCookie() != 42 {
		t.Fatalf("DEVICE_CONFIG_AND_COOKIE: %v", c)
	}
	// Without a cookie, none reads back.
	if err := h.setConfig(verifyAndCommit, 1, &p4v1.ForwardingPipelineConfig{P4Info: info}); err != nil {
		t.Fatal(err)
	}
	if c := h.getConfig(p4v1.GetForwardingPipelineConfigRequest_COOKIE_ONLY); c.Cookie != nil {
		t.Fatalf("cookie without one set: %v", c.Cookie)
	}
}

func TestPipelineRefusals(t *testing.T) {
	h := newHarness(t, Options{})
	h.primary(2)
	h.target.refuse = errors.New(`table "big_t" needs 1048576 entries, this target holds 65536`)
	for _, a := range []p4v1.SetForwardingPipelineConfigRequest_Action{p4v1.SetForwardingPipelineConfigRequest_VERIFY, verifyAndCommit, verifyAndSave} {
		err := h.setConfig(a, 2, cfgOf(testP4Info(), "", 1))
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "needs 1048576 entries") {
			t.Fatalf("%v with a refusing target: %v", a, err)
		}
	}
	if c := h.target.callsOf("commit"); len(c) != 0 {
		t.Fatal("a refused pipeline was committed")
	}
	h.target.refuse = nil

	bad := testP4Info()
	bad.Tables[1].Preamble.Id = bad.Tables[0].Preamble.Id
	if err := h.setConfig(verifyAndCommit, 2, cfgOf(bad, "", 1)); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "reuses id") {
		t.Fatalf("duplicate ids: %v", err)
	}
	bad = testP4Info()
	bad.Tables[0].MatchFields[0].Match = &p4configv1.MatchField_OtherMatchType{OtherMatchType: "selector"}
	if err := h.setConfig(verifyAndCommit, 2, cfgOf(bad, "", 1)); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `"exact_t"`) {
		t.Fatalf("unsupported match kind: %v", err)
	}
	if err := h.setConfig(verifyAndCommit, 2, nil); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("no config: %v", err)
	}
	if err := h.setConfig(verifyAndCommit, 1, cfgOf(testP4Info(), "", 1)); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("not the primary: %v", err)
	}
	if err := h.setConfig(commitSaved, 2, nil); status.Code(err) != codes.NotFound {
		t.Fatalf("COMMIT with nothing saved: %v", err)
	}
	if err := h.setConfig(commitSaved, 2, cfgOf(testP4Info(), "", 1)); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("COMMIT with a config: %v", err)
	}
	if err := h.setConfig(p4v1.SetForwardingPipelineConfigRequest_UNSPECIFIED, 2, cfgOf(testP4Info(), "", 1)); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("UNSPECIFIED action: %v", err)
	}
	_, err := h.client.GetForwardingPipelineConfig(context.Background(), &p4v1.GetForwardingPipelineConfigRequest{DeviceId: 99})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("get for an unknown device: %v", err)
	}
}

func TestSaveThenCommitReplaysWhatWasWritten(t *testing.T) {
	h, _ := ready(t, Options{})
	h.mustWrite(ins(exactEntry(1, 1)))
	if err := h.setConfig(verifyAndSave, 1, cfgOf(testP4Info(), "v2", 43)); err != nil {
		t.Fatal(err)
	}
	if c := h.getConfig(p4v1.GetForwardingPipelineConfigRequest_COOKIE_ONLY); c.Cookie.GetCookie() != 43 {
		t.Fatalf("saved config cookie %v", c.Cookie)
	}
	if got := h.mustRead(tableEnt(&p4v1.TableEntry{TableId: tblExact})); len(got) != 0 {
		t.Fatalf("reads refer to the saved pipeline, which is empty: %v", got)
	}
	tableCalls := len(h.target.callsOf("table"))
	h.mustWrite(ins(exactEntry(2, 2)), mod(registerEnt(regRTT, idx(1), []byte{5})), ins(cloneEnt(100, replica(3, 0))),
		mod(tableEnt(&p4v1.TableEntry{TableId: tblExact, IsDefaultAction: true, Action: action(actDrop)})))
	if len(h.target.callsOf("table")) != tableCalls || len(h.target.callsOf("register")) != 0 || len(h.target.callsOf("clone")) != 0 {
		t.Fatal("writes to a saved pipeline reached the target before COMMIT")
	}
	if r := h.mustRead(registerEnt(regRTT, idx(1), nil)); decodeUint(r[0].GetRegisterEntry().Data.GetBitstring()) != 5 {
		t.Fatalf("saved register read %v", r)
	}

	if err := h.setConfig(commitSaved, 1, nil); err != nil {
		t.Fatal(err)
	}
	commits := h.target.callsOf("commit")
	if len(commits) != 2 || string(commits[1].data) != "v2" {
		t.Fatalf("commits %+v", commits)
	}
	tc := h.target.callsOf("table")
	if len(tc) != tableCalls+1 || decodeUint(tc[len(tc)-1].entry.Match[0].GetExact().Value) != 2 {
		t.Fatalf("replayed table writes %+v", tc[tableCalls:])
	}
	if v, _ := h.target.ReadRegister(regRTT, 1); v != 5 {
		t.Fatalf("replayed register rtt[1] = %d", v)
	}
	if len(h.target.callsOf("clone")) != 1 || len(h.target.callsOf("default")) != 1 {
		t.Fatal("clone session or default action not replayed")
	}
	if got := h.mustRead(tableEnt(&p4v1.TableEntry{TableId: tblExact})); len(got) != 1 {
		t.Fatalf("after commit: %v", got)
	}
}

func TestReconcileKeepsStateOnlyForTheSameP4Info(t *testing.T) {
	h, _ := ready(t, Options{})
	h.mustWrite(ins(exactEntry(1, 1)), ins(exactEntry(2, 1)))
	if err := h.setConfig(reconcile, 1, cfgOf(testP4Info(), "", 99)); err != nil {
		t.Fatal(err)
	}
	if len(h.target.callsOf("commit")) != 1 {
		t.Fatal("reconciling the same pipeline recommitted it")
	}
	if c := h.getConfig(p4v1.GetForwardingPipelineConfigRequest_COOKIE_ONLY); c.Cookie.GetCookie() != 99 {
		t.Fatalf("cookie after reconcile: %v", c.Cookie)
	}
	if n := len(h.mustRead(tableEnt(&p4v1.TableEntry{TableId: tblExact}))); n != 2 {
		t.Fatalf("entries after reconcile: %d", n)
	}

	tableCalls := len(h.target.callsOf("table"))
	if err := h.setConfig(reconcile, 1, cfgOf(testP4Info(), "new-device-config", 100)); err != nil {
		t.Fatal(err)
	}
	if len(h.target.callsOf("commit")) != 2 || len(h.target.callsOf("table")) != tableCalls+2 {
		t.Fatal("a new device config must recommit and replay the entries")
	}
	if n := len(h.mustRead(tableEnt(&p4v1.TableEntry{TableId: tblExact}))); n != 2 {
		t.Fatalf("entries after device-config reconcile: %d", n)
	}

	other := testP4Info()
	other.Tables = other.Tables[:3]
	if err := h.setConfig(reconcile, 1, cfgOf(other, "", 101)); err != nil {
		t.Fatal(err)
	}
	if n := len(h.mustRead(tableEnt(&p4v1.TableEntry{TableId: tblExact}))); n != 0 {
		t.Fatalf("a different P4Info starts empty, got %d entries", n)
	}
	if _, _, err := h.read(tableEnt(&p4v1.TableEntry{TableId: tblBig})); status.Code(err) != codes.Unknown {
		t.Fatalf("a table of the old P4Info still reads: %v", err)
	}
}
