package controllers

// The device gate of a UserPlaneFunction (docs/p4runtime-targets.md): the operator connects to
// a UPF's device only when a P4RuntimeTarget, which only an administrator writes, grants the
// UPF's namespace that device. A tenant who may write UPFs can then point the operator only at
// the devices granted to its namespace.

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// ReasonDeviceNotGranted: no P4RuntimeTarget grants the UserPlaneFunction's namespace its device;
// the operator does not connect. Not stalled: the grant may come with the same sync.
const ReasonDeviceNotGranted = "DeviceNotGranted"

// grantOf returns a P4RuntimeTarget that grants upf's namespace upf's device (the cache's
// object: read only), or nil when none does.
func grantOf(ctx context.Context, c client.Reader, hosts *deviceHostCache, upf *junctionv1.UserPlaneFunction) (*junctionv1.P4RuntimeTarget, error) {
	var list junctionv1.P4RuntimeTargetList
	d := upfDevice(upf)
	if err := c.List(ctx, &list, client.MatchingFields{indexTargetDevice: d.key()}, client.UnsafeDisableDeepCopy); err != nil { // read only
		return nil, err
	}
	for i := range list.Items {
		t := &list.Items[i]
		if t.Spec.Namespace == upf.Namespace && t.DeletionTimestamp == nil && hosts.sameDevice(ctx, d, targetDevice(t)) {
			return t, nil
		}
	}
	return nil, nil
}

// checkGrant returns the P4RuntimeTarget that grants upf's namespace its device, or a *loadError
// of ReasonDeviceNotGranted when none does, saying what would.
func checkGrant(ctx context.Context, c client.Reader, hosts *deviceHostCache, upf *junctionv1.UserPlaneFunction) (*junctionv1.P4RuntimeTarget, error) {
	t, err := grantOf(ctx, c, hosts, upf)
	if err != nil || t != nil {
		return t, err
	}
	ep := upf.Spec.P4Runtime
	role := ""
	if ep.Role != "" {
		role = fmt.Sprintf(", role %q", ep.Role)
	}
	return nil, &loadError{ReasonDeviceNotGranted, fmt.Errorf("no P4RuntimeTarget grants namespace %s the device at %s (device ID %d%s), so the operator does not connect to it; "+
		"an administrator grants it with a P4RuntimeTarget whose spec.namespace is %s and whose spec.address, spec.deviceID and spec.role name that device",
		upf.Namespace, ep.Address, ep.DeviceID, role, upf.Namespace)}
}
