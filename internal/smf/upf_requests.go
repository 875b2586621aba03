package smf

import (
	"context"
	"slices"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"
)

// RefuseSetups makes the SMF answer the UPF's Association Setup Requests with cause (0: accept
// them again, the default).
func (c *Client) RefuseSetups(cause uint8) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cause == 0 {
		cause = ie.CauseRequestAccepted
	}
	c.setupCause = cause
}

// ReleaseWhenAsked makes the SMF release the association with its own Association Release
// Request when the UPF asks for it (an Association Update Request with SARR), as TS 29.244
// §6.2.7.3 has an SMF do; without it the SMF answers the update and does nothing more.
func (c *Client) ReleaseWhenAsked(yes bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.releaseAsks = yes
}

// Restart gives the SMF a new Recovery Time Stamp, as a restarted SMF has: its heartbeats
// tell the UPF it lost its associations and sessions.
func (c *Client) Restart() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Recovery = c.Recovery.Add(time.Second)
}

// SetupRequests and UpdateRequests are the UPF's Association Setup and Update Requests the SMF
// answered, each once (retransmissions are answered again, not counted).
func (c *Client) SetupRequests() []*Response {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.setups)
}

func (c *Client) UpdateRequests() []*Response {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.updates)
}

// ReleaseRequested says whether an Association Update Request asks the SMF to release the
// association: the PFCP Association Release Request IE with SARR (TS 29.244 §8.2.77).
func ReleaseRequested(r *Response) bool {
	x := r.Find(ie.PFCPAssociationReleaseRequest)
	return x != nil && x.HasSARR()
}

// upfAssociationRequest answers an Association Setup or Update Request the UPF sent: a setup
// with the SMF's Node ID, setupCause and Recovery Time Stamp (TS 29.244 §7.4.4.2), an update
// with its Node ID and Request accepted.
func (c *Client) upfAssociationRequest(h *message.Header, b []byte) []byte {
	ies, err := ie.ParseMultiIEs(h.Payload)
	if err != nil {
		return nil
	}
	r := &Response{Header: h, IEs: ies, Raw: b}
	seen := func(list []*Response) bool {
		return slices.ContainsFunc(list, func(x *Response) bool { return x.Header.SequenceNumber == h.SequenceNumber })
	}
	nodeID := ie.NewNodeIDHeuristic(c.NodeID)
	c.mu.Lock()
	defer c.mu.Unlock()
	if h.Type == message.MsgTypeAssociationSetupRequest {
		if !seen(c.setups) {
			c.setups = append(c.setups, r)
		}
		out, _ := message.NewAssociationSetupResponse(h.SequenceNumber, nodeID, ie.NewCause(c.setupCause), ie.NewRecoveryTimeStamp(c.Recovery)).Marshal()
		return out
	}
	if !seen(c.updates) {
		c.updates = append(c.updates, r)
		if c.releaseAsks && ReleaseRequested(r) {
			go func() { _, _ = c.Release(context.Background()) }()
		}
	}
	out, _ := message.NewAssociationUpdateResponse(h.SequenceNumber, nodeID, ie.NewCause(ie.CauseRequestAccepted)).Marshal()
	return out
}
