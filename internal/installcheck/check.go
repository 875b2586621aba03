// Package installcheck says whether a Junction installation works: the API server serves every
// Junction kind, and an operator runs (it holds the leader-election Lease, or with leader election
// off its Deployment has a ready replica). The chart's helm test Pod runs it (/manager check),
// as cert-manager's startupapicheck checks its webhook after an install.
package installcheck

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// Config names the installation's operator.
type Config struct {
	// Namespace is the operator's.
	Namespace string
	// Deployment is the operator's Deployment.
	Deployment string
	// Lease is the operator's leader-election Lease; empty: leader election is off, and a ready
	// replica of Deployment is the operator up.
	Lease string
}

// Kinds are the Junction kinds the API server must serve: every kind of api/v1alpha1.
func Kinds() []schema.GroupVersionKind {
	s := runtime.NewScheme()
	if err := junctionv1.AddToScheme(s); err != nil {
		panic(err)
	}
	var out []schema.GroupVersionKind
	for gvk := range s.AllKnownTypes() {
		if gvk.GroupVersion() == junctionv1.GroupVersion && strings.HasSuffix(gvk.Kind, "List") {
			out = append(out, gvk)
		}
	}
	slices.SortFunc(out, func(a, b schema.GroupVersionKind) int { return strings.Compare(a.Kind, b.Kind) })
	return out
}

// Check says once whether the installation works: nil, or an error naming each missing part.
// The Lease counts as held while its holder's last renewal is younger than its duration.
func Check(ctx context.Context, c client.Client, cfg Config, now time.Time) error {
	var errs []error
	for _, gvk := range Kinds() {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk)
		if err := c.List(ctx, list, client.Limit(1)); err != nil {
			errs = append(errs, fmt.Errorf("%s is not served: %w", strings.TrimSuffix(gvk.Kind, "List"), err))
		}
	}
	if cfg.Lease != "" {
		errs = append(errs, leaseHeld(ctx, c, cfg, now))
	} else {
		errs = append(errs, deploymentReady(ctx, c, cfg))
	}
	return errors.Join(errs...)
}

func leaseHeld(ctx context.Context, c client.Client, cfg Config, now time.Time) error {
	l := &coordinationv1.Lease{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: cfg.Namespace, Name: cfg.Lease}, l); err != nil {
		return fmt.Errorf("no operator has led yet: Lease %s/%s: %w", cfg.Namespace, cfg.Lease, err)
	}
	s := l.Spec
	if s.HolderIdentity == nil || *s.HolderIdentity == "" {
		return fmt.Errorf("no operator leads: Lease %s/%s has no holder", cfg.Namespace, cfg.Lease)
	}
	if s.RenewTime == nil || s.LeaseDurationSeconds == nil {
		return fmt.Errorf("Lease %s/%s held by %s has no renewal time or duration", cfg.Namespace, cfg.Lease, *s.HolderIdentity)
	}
	if age, d := now.Sub(s.RenewTime.Time), time.Duration(*s.LeaseDurationSeconds)*time.Second; age > d {
		return fmt.Errorf("the leader %s stopped renewing Lease %s/%s %v ago (it lasts %v)", *s.HolderIdentity, cfg.Namespace, cfg.Lease, age.Round(time.Second), d)
	}
	return nil
}

func deploymentReady(ctx context.Context, c client.Client, cfg Config) error {
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: cfg.Namespace, Name: cfg.Deployment}, d); err != nil {
		return fmt.Errorf("the operator's Deployment %s/%s: %w", cfg.Namespace, cfg.Deployment, err)
	}
	if d.Status.ReadyReplicas == 0 {
		return fmt.Errorf("the operator's Deployment %s/%s has no ready replica", cfg.Namespace, cfg.Deployment)
	}
	return nil
}

// Wait runs Check every interval until it passes or ctx ends, and returns Check's last error.
func Wait(ctx context.Context, c client.Client, cfg Config, interval time.Duration) error {
	for {
		err := Check(ctx, c, cfg, time.Now())
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(interval):
		}
	}
}
