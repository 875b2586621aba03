package programmer

import (
	"reflect"
	"testing"
)

// The resets follow docs/pipeline.md: registers start at 0 ("not suspended", "available, RTT not
// measured yet"), so a new user on an index unused since the pipeline push needs no write, and
// any other index gets its new legs and suspension set back to 0.
func TestInitialPathWrites(t *testing.T) {
	fresh := func(users ...uint32) func(uint32) bool {
		return func(u uint32) bool {
			for _, f := range users {
				if f == u {
					return true
				}
			}
			return false
		}
	}
	for _, tc := range []struct {
		name          string
		before, after map[uint32]legCount
		fresh         func(uint32) bool
		pending       map[uint32]string
		want          []registerWrite
	}{
		{
			"a new user on an index unused since the pipeline push needs no write",
			nil, map[uint32]legCount{7: {1, 1, 0}}, fresh(7), nil,
			nil,
		},
		{
			"a new user on an index that may hold state is reset: suspension, autonomous share and both legs' RTT and loss",
			nil, map[uint32]legCount{7: {1, 1, 0}}, fresh(), nil,
			[]registerWrite{{RegisterSuspended, 7, 0}, {RegisterShare, 7, 0}, {RegisterRTT3GPP, 7, 0}, {RegisterLoss3GPP, 7, 0}, {RegisterRTTNon3GPP, 7, 0}, {RegisterLossNon3GPP, 7, 0}},
		},
		{
			"a user whose legs were already on the device keeps its measured state",
			map[uint32]legCount{7: {1, 1, 0}}, map[uint32]legCount{7: {2, 1, 0}}, fresh(), nil,
			nil,
		},
		{
			"a second session that adds a leg resets only that leg",
			map[uint32]legCount{7: {1, 0, 0}}, map[uint32]legCount{7: {1, 1, 0}}, fresh(7), nil,
			[]registerWrite{{RegisterRTTNon3GPP, 7, 0}, {RegisterLossNon3GPP, 7, 0}},
		},
		{
			"a user whose last session goes needs no write",
			map[uint32]legCount{7: {1, 1, 0}}, map[uint32]legCount{7: {0, 0, 0}}, fresh(), nil,
			nil,
		},
		{
			"a user whose reset was refused is reset whole again, even untouched by this round",
			map[uint32]legCount{7: {1, 1, 0}}, nil, fresh(), map[uint32]string{7: "s"},
			[]registerWrite{{RegisterSuspended, 7, 0}, {RegisterShare, 7, 0}, {RegisterRTT3GPP, 7, 0}, {RegisterLoss3GPP, 7, 0}, {RegisterRTTNon3GPP, 7, 0}, {RegisterLossNon3GPP, 7, 0}},
		},
		{
			"a refused user that is gone needs nothing",
			map[uint32]legCount{7: {1, 1, 0}}, map[uint32]legCount{7: {0, 0, 0}}, fresh(), map[uint32]string{7: "s"},
			nil,
		},
		{
			// docs/n4.md, "An access not active": an MA PDU session's inactive 3GPP leg keeps its
			// address in `sessions` without a tunnel peer, so steering reads its path state, which
			// must say unavailable until the leg is back and the UE reports it.
			"a 3GPP leg that goes idle (no tunnel peer) is reset to unavailable",
			map[uint32]legCount{7: {1, 1, 0}}, map[uint32]legCount{7: {0, 1, 1}}, fresh(), nil,
			[]registerWrite{{RegisterRTT3GPP, 7, 0}, {RegisterLoss3GPP, 7, 0}},
		},
		{
			"and again when it is back with a tunnel peer",
			map[uint32]legCount{7: {0, 1, 1}}, map[uint32]legCount{7: {1, 1, 0}}, fresh(), nil,
			[]registerWrite{{RegisterRTT3GPP, 7, 0}, {RegisterLoss3GPP, 7, 0}},
		},
		{
			"a new user whose 3GPP leg is idle gets that leg reset too",
			nil, map[uint32]legCount{7: {0, 1, 1}}, fresh(), nil,
			[]registerWrite{{RegisterSuspended, 7, 0}, {RegisterShare, 7, 0}, {RegisterRTT3GPP, 7, 0}, {RegisterLoss3GPP, 7, 0}, {RegisterRTTNon3GPP, 7, 0}, {RegisterLossNon3GPP, 7, 0}},
		},
		{
			"an idle 3GPP leg while another session of the user has it with a tunnel: the measured state stays",
			map[uint32]legCount{7: {2, 1, 0}}, map[uint32]legCount{7: {1, 1, 1}}, fresh(), nil,
			nil,
		},
		{
			"users are written in index order",
			nil, map[uint32]legCount{9: {0, 1, 0}, 2: {1, 0, 0}}, fresh(), nil,
			[]registerWrite{{RegisterSuspended, 2, 0}, {RegisterShare, 2, 0}, {RegisterRTT3GPP, 2, 0}, {RegisterLoss3GPP, 2, 0}, {RegisterSuspended, 9, 0}, {RegisterShare, 9, 0}, {RegisterRTTNon3GPP, 9, 0}, {RegisterLossNon3GPP, 9, 0}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := initialPathWrites(tc.before, tc.after, tc.fresh, tc.pending); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
