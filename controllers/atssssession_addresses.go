package controllers

// The address gate of a session (docs/address-pools.md): its addresses must come from an
// AddressPool granted to its namespace, and its session address must stay clear of the
// cluster's service ranges, the API server's address and --reserved-prefixes (node and pod
// ranges). A refused session has no entries on its UPF; an N4 session the endpoint programs
// itself (n4_direct.go) is refused to its SMF, before any entry is written.

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/addrpool"
)

// ReasonAddressNotAllowed: a session's address is not granted to its namespace, or is one the
// cluster needs (addrpool.Check).
const ReasonAddressNotAllowed = addrpool.Reason

// checkAddresses returns an *addrpool.RefusedError when the session may not use its addresses.
func (f *Fleet) checkAddresses(ctx context.Context, s *junctionv1.ATSSSSession) error {
	var pools junctionv1.AddressPoolList
	if err := f.Client.List(ctx, &pools, client.UnsafeDisableDeepCopy); err != nil { // read only
		return err
	}
	reserved, err := clusterRanges(ctx, f.Client)
	if err != nil {
		return err
	}
	return addrpool.Check(s, pools.Items, append(reserved, f.Reserved...))
}

// refuseAddresses takes a refused session's entries off its UPF (if a pool shrank under it)
// and says why.
func (r *ATSSSSessionReconciler) refuseAddresses(ctx context.Context, s *junctionv1.ATSSSSession, why error) error {
	_, err := r.removeEntries(ctx, client.ObjectKeyFromObject(s))
	prev := meta.FindStatusCondition(s.Status.Conditions, junctionv1.ConditionProgrammed)
	r.setProgrammed(s, false, ReasonAddressNotAllowed, why.Error())
	r.setReady(s, false, ReasonAddressNotAllowed, why.Error())
	if prev == nil || prev.Reason != ReasonAddressNotAllowed || prev.Message != why.Error() {
		r.Recorder.Event(s, corev1.EventTypeWarning, ReasonAddressNotAllowed, why.Error())
	}
	return err
}

// clusterRanges are the service ranges the cluster API shows (ServiceCIDRs); node and pod
// ranges come with --reserved-prefixes, and each UE agent adds its node's own networks.
func clusterRanges(ctx context.Context, c client.Reader) ([]addrpool.Reserved, error) {
	var cidrs networkingv1.ServiceCIDRList
	if err := c.List(ctx, &cidrs, client.UnsafeDisableDeepCopy); err != nil && !meta.IsNoMatchError(err) { // read only; clusters before 1.33 have none
		return nil, fmt.Errorf("list servicecidrs: %w", err)
	}
	var out []addrpool.Reserved
	for _, sc := range cidrs.Items {
		for _, p := range sc.Spec.CIDRs {
			if pfx, err := netip.ParsePrefix(p); err == nil && pfx.Addr().Is4() {
				out = append(out, addrpool.Reserved{Prefix: pfx, What: fmt.Sprintf("the cluster's service range (ServiceCIDR %s)", sc.Name)})
			}
		}
	}
	return out, nil
}

// isRefused tells a refusal from a failure to read what decides it.
func isRefused(err error) bool {
	var refused *addrpool.RefusedError
	return errors.As(err, &refused)
}
