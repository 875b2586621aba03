package chart

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/yaml"

	"github.com/junction-atsss/junction/controllers"
)

// operatorMetric is a metric the operator serves: its labels, and whether it is a histogram
// (queried through _bucket, _sum and _count).
type operatorMetric struct {
	labels    map[string]bool
	histogram bool
}

// operatorMetrics reads the names and labels of controllers.Collectors, the list the operator
// registers.
func operatorMetrics(t *testing.T) map[string]operatorMetric {
	t.Helper()
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	vl := regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
	out := map[string]operatorMetric{}
	for _, c := range controllers.Collectors() {
		ch := make(chan *prometheus.Desc, 1)
		go func() { c.Describe(ch); close(ch) }()
		_, histogram := c.(*prometheus.HistogramVec)
		if _, ok := c.(prometheus.Histogram); ok {
			histogram = true
		}
		for d := range ch {
			m := fq.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("no name in %s", d)
			}
			labels := map[string]bool{}
			if l := vl.FindStringSubmatch(d.String()); l != nil {
				for _, name := range strings.Split(l[1], ",") {
					if name != "" {
						labels[strings.Trim(name, "{}")] = true
					}
				}
			}
			out[m[1]] = operatorMetric{labels, histogram}
		}
	}
	if len(out) < 20 {
		t.Fatalf("only %d operator metrics: %v", len(out), out)
	}
	return out
}

var (
	// a selector: a metric name, optionally with {label matchers}.
	selectorRE = regexp.MustCompile(`\b(junction_[a-z0-9_]+)(\{[^}]*\})?`)
	matcherRE  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)`)
)

// checkQuery fails for a junction_ metric the operator does not serve, or a label it does not have.
func checkQuery(t *testing.T, where, expr string, served map[string]operatorMetric) int {
	t.Helper()
	n := 0
	for _, m := range selectorRE.FindAllStringSubmatch(expr, -1) {
		name, labels := m[1], map[string]bool{}
		metric, ok := served[name]
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, cut := strings.CutSuffix(name, suffix); !ok && cut && served[base].histogram {
				metric, ok = served[base], true
				if suffix == "_bucket" {
					labels["le"] = true
				}
			}
		}
		if !ok {
			t.Errorf("%s: %s is not a metric the operator serves (controllers.Collectors)", where, name)
			continue
		}
		n++
		for _, lm := range matcherRE.FindAllStringSubmatch(m[2], -1) {
			if !metric.labels[lm[1]] && !labels[lm[1]] {
				t.Errorf("%s: %s has no label %q (it has %v)", where, name, lm[1], keys(metric.labels))
			}
		}
	}
	return n
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// The alerts the chart promises (the README's list) exist, and query only what the operator serves.
func TestAlertsUseTheOperatorsMetrics(t *testing.T) {
	served := operatorMetrics(t)
	rule := render(t, allOptional...)["PrometheusRule/j-junction-operator"]
	if rule == nil {
		t.Fatal("PrometheusRule/j-junction-operator not rendered")
	}
	groups := rule.Object["spec"].(map[string]any)["groups"].([]any)
	alerts := map[string]bool{}
	for _, g := range groups {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			r := r.(map[string]any)
			name := r["alert"].(string)
			alerts[name] = true
			if name == "JunctionOperatorMetricsAbsent" {
				// Prometheus' own up of the operator's target: it has none of the operator's metrics.
				if want := `absent(up{job="j-junction-operator-metrics", namespace="junction-system"} == 1)`; r["expr"] != want {
					t.Errorf("%s: %s, want %s", name, r["expr"], want)
				}
				continue
			}
			if checkQuery(t, name, r["expr"].(string), served) == 0 {
				t.Errorf("%s queries no Junction metric: %s", name, r["expr"])
			}
		}
	}
	for _, want := range []string{"JunctionUPFDisconnected", "JunctionTableNearlyFull", "JunctionSessionsNotProgrammed", "JunctionPathUpdatesSuspended"} {
		if !alerts[want] {
			t.Errorf("no alert %s (have %v)", want, keys(alerts))
		}
	}
}

// promtool checks the rendered rules and runs testdata/alerts_test.yaml: hand-written series for
// three UPFs and the alerts that must fire, with their labels and rendered annotations, and must
// not fire before their `for`.
func TestAlertRulesWithPromtool(t *testing.T) {
	promtool := filepath.Join(root, "bin", "promtool")
	if _, err := os.Stat(promtool); err != nil {
		t.Fatalf("promtool is not built (hack/tools.sh promtool): %v", err)
	}
	rule := render(t, "--set", "metrics.prometheusRule.enabled=true")["PrometheusRule/j-junction-operator"]
	if rule == nil {
		t.Fatal("PrometheusRule/j-junction-operator not rendered")
	}
	rules, err := yaml.Marshal(rule.Object["spec"])
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tests, err := os.ReadFile(filepath.Join("testdata", "alerts_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"rules.yaml": rules, "alerts_test.yaml": tests} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// The Grafana dashboard is valid JSON whose every panel queries metrics the operator serves, and
// the chart ships it unchanged with the sidecar's label.
func TestDashboardUsesTheOperatorsMetrics(t *testing.T) {
	served := operatorMetrics(t)
	src, err := os.ReadFile(filepath.Join(chart, "files", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(src, &d); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	if d.UID == "" || len(d.Panels) < 8 {
		t.Fatalf("dashboard uid %q, %d panels", d.UID, len(d.Panels))
	}
	queried := map[string]bool{}
	for _, p := range d.Panels {
		if p.Title == "" || len(p.Targets) == 0 {
			t.Errorf("a panel without title or queries: %+v", p)
		}
		for _, q := range p.Targets {
			if checkQuery(t, p.Title, q.Expr, served) == 0 && !strings.Contains(q.Expr, "controller_runtime_reconcile_total") {
				t.Errorf("%s queries nothing the operator serves: %s", p.Title, q.Expr)
			}
			for _, m := range selectorRE.FindAllStringSubmatch(q.Expr, -1) {
				queried[strings.TrimSuffix(m[1], "_bucket")] = true
			}
		}
	}
	// What an operator of a UPF looks at first: sessions, tables, the P4Runtime stream, paths.
	for _, want := range []string{"junction_sessions", "junction_table_entries", "junction_p4runtime_connected", "junction_path_rtt_seconds", "junction_path_users_suspended"} {
		if !queried[want] {
			t.Errorf("no panel shows %s", want)
		}
	}

	cm := render(t, "--set", "metrics.dashboard.enabled=true")["ConfigMap/j-junction-dashboard"]
	if cm == nil {
		t.Fatal("ConfigMap/j-junction-dashboard not rendered")
	}
	if got := cm.GetLabels()["grafana_dashboard"]; got != "1" {
		t.Errorf("dashboard ConfigMap label grafana_dashboard=%q, want 1 (the sidecar's default)", got)
	}
	if got, _ := cm.Object["data"].(map[string]any)["junction.json"].(string); strings.TrimSpace(got) != strings.TrimSpace(string(src)) {
		t.Error("the ConfigMap's junction.json differs from files/grafana-dashboard.json")
	}
}
