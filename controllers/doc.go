// Package controllers reconciles Junction's kinds into P4Runtime writes on each UserPlaneFunction.
package controllers

// The operator's permissions, generated into config/rbac by `make manifests`. Leader election
// (the Lease, whose leaseTransitions also give the P4Runtime election ID) is granted in the
// operator's namespace only, by config/rbac/leader_election_role.yaml.
// +kubebuilder:rbac:groups=atsss.junction.dev,resources=userplanefunctions;steeringpolicies;atssssessions,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=atsss.junction.dev,resources=userplanefunctions/status;steeringpolicies/status;atssssessions/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=atsss.junction.dev,resources=userplanefunctions/finalizers;steeringpolicies/finalizers;atssssessions/finalizers,verbs=update
// The N4 endpoints (n4.go) create and delete the sessions and traffic classes SMFs ask for.
// +kubebuilder:rbac:groups=atsss.junction.dev,resources=steeringpolicies;atssssessions,verbs=create;delete
// The UPFs' pipeline ConfigMaps, in any namespace.
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch
// The UPFs' TLS Secrets: a Role, granted in each namespace that holds UPFs (the chart's
// upfNamespaces; config/default: the operator's own), never every Secret of the cluster.
// +kubebuilder:rbac:groups="",namespace=system,resources=secrets,verbs=get;list;watch
// The administrator's grants (AddressPools, P4RuntimeTargets), and the service ranges a session
// address must stay out of.
// +kubebuilder:rbac:groups=atsss.junction.dev,resources=addresspools;p4runtimetargets,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=servicecidrs,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
