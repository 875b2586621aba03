package smf

// Usage reporting as an SMF sees it: the URR the emulator puts on its sessions, the Session
// Report Requests the UPF sends (answered here, kept for the caller), and the Usage Reports
// of any message, decoded.

import (
	"fmt"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"
)

// URRID is the URR the emulator gives a session, named by every PDR.
const URRID uint32 = 1

// URR is what the emulator asks of a session's usage: volume and duration, reported every
// Period and when VolumeThreshold bytes (uplink and downlink together) went by, either when
// not zero; and always at deletion. MeasurementInformation, when not zero, is sent as the
// Measurement Information flags (Open5GS sends MNOP to a UPF that advertises it, and ISTM with
// a time threshold).
type URR struct {
	Period                 time.Duration
	VolumeThreshold        uint64
	MeasurementInformation uint8
}

// CreateURR is the session's Create URR.
func (u URR) CreateURR() *ie.IE {
	var triggers uint8
	ies := []*ie.IE{ie.NewURRID(URRID), ie.NewMeasurementMethod(0, 1, 1)}
	if u.Period > 0 {
		triggers |= 0x01 // PERIO
		ies = append(ies, ie.NewMeasurementPeriod(u.Period))
	}
	if u.VolumeThreshold > 0 {
		triggers |= 0x02 // VOLTH
		ies = append(ies, ie.NewVolumeThreshold(0x01, u.VolumeThreshold, 0, 0))
	}
	if u.MeasurementInformation != 0 {
		ies = append(ies, ie.NewMeasurementInformation(u.MeasurementInformation))
	}
	return ie.NewCreateURR(append(ies, ie.NewReportingTriggers(triggers, 0))...)
}

// UsageReport is one Usage Report IE, decoded.
type UsageReport struct {
	URRID   uint32
	Seq     uint32
	Trigger []byte // Usage Report Trigger octets
	// Volume: bytes and packets, total / uplink / downlink, as the UPF measured them.
	Total, Uplink, Downlink                uint64
	TotalPackets, UplinkPackets, DLPackets uint64
	Duration                               time.Duration
	Start, End                             time.Time
}

func (r UsageReport) String() string {
	return fmt.Sprintf("URR %d #%d trigger %x: %d B up (%d packets), %d B down (%d packets) in %s",
		r.URRID, r.Seq, r.Trigger, r.Uplink, r.UplinkPackets, r.Downlink, r.DLPackets, r.Duration)
}

// UsageReports decodes the Usage Reports among ies (of any of the three kinds).
func UsageReports(ies []*ie.IE) ([]UsageReport, error) {
	var out []UsageReport
	for _, x := range ies {
		switch x.Type {
		case ie.UsageReportWithinSessionModificationResponse, ie.UsageReportWithinSessionDeletionResponse, ie.UsageReportWithinSessionReportRequest:
		default:
			continue
		}
		children, err := ie.ParseMultiIEs(x.Payload)
		if err != nil {
			return nil, fmt.Errorf("usage report: %w", err)
		}
		var r UsageReport
		for _, c := range children {
			switch c.Type {
			case ie.URRID:
				r.URRID, err = c.URRID()
			case ie.URSEQN:
				r.Seq, err = c.URSEQN()
			case ie.UsageReportTrigger:
				r.Trigger = append([]byte(nil), c.Payload...)
			case ie.VolumeMeasurement:
				var v *ie.VolumeMeasurementFields
				if v, err = c.VolumeMeasurement(); err == nil {
					r.Total, r.Uplink, r.Downlink = v.TotalVolume, v.UplinkVolume, v.DownlinkVolume
					r.TotalPackets, r.UplinkPackets, r.DLPackets = v.TotalNumberOfPackets, v.UplinkNumberOfPackets, v.DownlinkNumberOfPackets
				}
			case ie.DurationMeasurement:
				r.Duration, err = c.DurationMeasurement()
			case ie.StartTime:
				r.Start, err = c.StartTime()
			case ie.EndTime:
				r.End, err = c.EndTime()
			}
			if err != nil {
				return nil, fmt.Errorf("usage report: IE %d: %w", c.Type, err)
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// Reports returns the Session Report Requests the UPF sent, in order.
func (c *Client) Reports() []*Response {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Response(nil), c.reports...)
}

// sessionReport answers a Session Report Request and keeps it.
func (c *Client) sessionReport(h *message.Header, b []byte) []byte {
	ies, err := ie.ParseMultiIEs(h.Payload)
	if err != nil {
		r, _ := message.NewSessionReportResponse(0, 0, 0, h.SequenceNumber, 0, ie.NewCause(ie.CauseMandatoryIEIncorrect)).Marshal()
		return r
	}
	c.mu.Lock()
	c.reports = append(c.reports, &Response{Header: h, IEs: ies, Raw: b})
	up, answer := c.upSEIDs[h.SEID], c.reportAnswer
	c.mu.Unlock()
	if answer == nil {
		answer = []*ie.IE{ie.NewCause(ie.CauseRequestAccepted)}
	}
	r, _ := message.NewSessionReportResponse(0, 0, up, h.SequenceNumber, 0, answer...).Marshal()
	return r
}

// AnswerReports has the SMF answer the UPF's Session Report Requests with ies from now on (nil:
// Cause Request accepted). SD-Core's SMF answers a Downlink Data Report whose UE the AMF cannot
// reach with Cause 64 and PFCPSRRsp-Flags DROBU.
func (c *Client) AnswerReports(ies ...*ie.IE) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reportAnswer = ies
}
