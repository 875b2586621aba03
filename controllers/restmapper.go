package controllers

import (
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// restMappingTTL is how long a kind's REST mapping is reused: a CRD deleted and created again
// with another scope is seen within it.
const restMappingTTL = time.Minute

// newRESTMapper is controller-runtime's dynamic REST mapper with its RESTMapping results kept
// for restMappingTTL. Every cached read asks it whether the kind is namespaced, and its answer
// walks every API group's mapper with allocations each time: a tenth of an N4 establishment's
// CPU went there (make bench-n4).
func newRESTMapper(cfg *rest.Config, hc *http.Client) (meta.RESTMapper, error) {
	m, err := apiutil.NewDynamicRESTMapper(cfg, hc)
	if err != nil {
		return nil, err
	}
	return &memoRESTMapper{RESTMapper: m, ttl: restMappingTTL, now: time.Now, kept: map[mappingKey]keptMapping{}}, nil
}

// memoRESTMapper keeps RESTMapping's successful answers; a kind it does not know is asked again
// each time (the dynamic mapper then looks for a new API group).
type memoRESTMapper struct {
	meta.RESTMapper
	ttl time.Duration
	now func() time.Time

	mu   sync.Mutex
	kept map[mappingKey]keptMapping
}

// mappingKey is a question to RESTMapping: nearly every caller asks for one version, so a key
// builds no string.
type mappingKey struct {
	gk       schema.GroupKind
	versions string
}

type keptMapping struct {
	m  meta.RESTMapping
	at time.Time
}

func (m *memoRESTMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	key := mappingKey{gk, strings.Join(versions, ",")} // no allocation for none or one
	now := m.now()
	m.mu.Lock()
	k, ok := m.kept[key]
	m.mu.Unlock()
	if ok && now.Sub(k.at) < m.ttl {
		out := k.m // a copy: callers get a mapping of their own, as from the mapper
		return &out, nil
	}
	res, err := m.RESTMapper.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.kept[key] = keptMapping{m: *res, at: now}
	m.mu.Unlock()
	return res, nil
}
