package v1alpha1

import "fmt"

// TunnelEndpointIndex returns the index in spec.tunnelEndpoints of the endpoint a session names
// in its spec.tunnelEndpoint ("" is the first). The error names the session's field; the
// operator, the UE agent and the gNB emulator all resolve endpoints here.
func (u *UserPlaneFunction) TunnelEndpointIndex(name string) (int, error) {
	for i, ep := range u.Spec.TunnelEndpoints {
		if name == "" && i == 0 || ep.Name == name {
			return i, nil
		}
	}
	return 0, fmt.Errorf("spec.tunnelEndpoint: UserPlaneFunction %s has no tunnel endpoint %q", u.Name, name)
}
