package ueagent

import (
	"fmt"
	"net/netip"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/desired"
)

// Config is everything a session's tunnel is built from, gathered from the ATSSSSession, its
// UserPlaneFunction and the SteeringPolicies it selects.
type Config struct {
	// Session is the session address: the TUN's address and the session ID in the UPF.
	Session netip.Addr
	// UPF is the UPF tunnel endpoint's junctionAddress, where both legs send.
	UPF netip.Addr
	// Legs are the UE addresses of the legs, indexed by contract.Access; invalid when absent.
	Legs [3]netip.Addr
	// Policies are the selected policies (desired.SelectPolicies, as the operator selects them).
	Policies []desired.Policy
	// Own is the session's own steering: spec.modeOverride, modeOverrideThresholds and
	// policySteering (steer.NewClassifier reads only those).
	Own junctionv1.ATSSSSessionSpec
	// Generation is the session's metadata.generation.
	Generation int64
}

// sameTunnel reports whether two configs need the same TUN and legs, so that only the steering
// (policies, override) differs and the tunnel can be updated in place.
func (c Config) sameTunnel(o Config) bool {
	return c.Session == o.Session && c.UPF == o.UPF && c.Legs == o.Legs
}

// BuildConfig gathers a session's tunnel configuration. Errors name the field that cannot be
// used; the agent reports them in the session's AgentReady condition.
func BuildConfig(s *junctionv1.ATSSSSession, upf *junctionv1.UserPlaneFunction, policies []junctionv1.SteeringPolicy) (Config, []string, error) {
	c := Config{Generation: s.Generation, Own: junctionv1.ATSSSSessionSpec{
		ModeOverride: s.Spec.ModeOverride, ModeOverrideThresholds: s.Spec.ModeOverrideThresholds, PolicySteering: s.Spec.PolicySteering}}
	var err error
	if c.Session, err = parseIPv4("spec.sessionAddress", s.Spec.SessionAddress); err != nil {
		return c, nil, err
	}
	if upf == nil {
		return c, nil, fmt.Errorf("spec.upfRef: UserPlaneFunction %q not found", s.Spec.UPFRef.Name)
	}
	ep, err := tunnelEndpoint(upf, s.Spec.TunnelEndpoint)
	if err != nil {
		return c, nil, err
	}
	if c.UPF, err = parseIPv4(fmt.Sprintf("UserPlaneFunction %s tunnelEndpoints[%s].junctionAddress", upf.Name, ep.Name), ep.JunctionAddress); err != nil {
		return c, nil, err
	}
	if leg := s.Spec.AccessLegs.ThreeGPP; leg != nil {
		if c.Legs[contract.Access3GPP], err = parseIPv4(legField(contract.Access3GPP), leg.UEAddress); err != nil {
			return c, nil, err
		}
	}
	if leg := s.Spec.AccessLegs.NonThreeGPP; leg != nil {
		if c.Legs[contract.AccessNon3GPP], err = parseIPv4(legField(contract.AccessNon3GPP), leg.UEAddress); err != nil {
			return c, nil, err
		}
	}
	sel, missing, pending := desired.SelectPolicies(s, policies)
	c.Policies = sel
	return c, append(missing, pending...), nil
}

func tunnelEndpoint(upf *junctionv1.UserPlaneFunction, name string) (junctionv1.TunnelEndpoint, error) {
	i, err := upf.TunnelEndpointIndex(name)
	if err != nil {
		return junctionv1.TunnelEndpoint{}, err
	}
	return upf.Spec.TunnelEndpoints[i], nil
}

// legField is the spec field that holds a leg's UE address.
func legField(a contract.Access) string {
	if a == contract.Access3GPP {
		return "spec.accessLegs.threeGPP.ueAddress"
	}
	return "spec.accessLegs.nonThreeGPP.ueAddress"
}

func parseIPv4(field string, s junctionv1.IPv4Address) (netip.Addr, error) {
	a, err := netip.ParseAddr(string(s))
	if err != nil || !a.Is4() || a.IsUnspecified() {
		return netip.Addr{}, fmt.Errorf("%s: %q is not a usable IPv4 address", field, s)
	}
	return a, nil
}
