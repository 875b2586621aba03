package chart

// The release path (hack/release.sh, the Dockerfile, hack/build.sh) as far as it runs without
// Docker: the Dockerfile's build stage as written, the version from the VERSION file alone, and
// the chart the release packages, installed from its .tgz.

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/junction-atsss/junction/internal/testenv"
)

// The image holds every command of cmd/ but cmd/vectors (a test tool: it needs test/, which
// .dockerignore keeps out of the build context).
var notInImage = []string{"vectors"}

// The Dockerfile's build stage, run as it says without Docker: its COPY lines copy what they name
// (less what .dockerignore excludes) into an empty directory standing in for WORKDIR, and its RUN
// lines run there under sh with TARGETOS and TARGETARCH as buildx sets them, for each platform of
// the release. What they leave where the final stage copies from must be every command of cmd/
// (less notInImage), static, for that platform.
func TestDockerfileBuildsEveryBinary(t *testing.T) {
	stage := buildStage(t)
	var ignored []string
	if b, err := os.ReadFile(filepath.Join(root, ".dockerignore")); err == nil {
		for _, l := range strings.Fields(string(b)) {
			ignored = append(ignored, strings.TrimSuffix(l, "/"))
		}
	}
	var want []string
	cmds, _ := os.ReadDir(filepath.Join(root, "cmd"))
	for _, d := range cmds {
		if d.IsDir() && !slices.Contains(notInImage, d.Name()) {
			want = append(want, d.Name())
		}
	}
	if len(want) < 5 {
		t.Fatalf("cmd/ holds %v", want)
	}

	for _, arch := range []string{"amd64", "arm64"} {
		t.Run(arch, func(t *testing.T) {
			work := t.TempDir()
			for _, ins := range stage.instructions {
				switch ins.op {
				case "COPY":
					copyContext(t, ins.args, work, ignored)
				case "RUN":
					cmd := exec.Command("sh", "-ec", ins.args)
					cmd.Dir = work
					cmd.Env = append(os.Environ(), "TARGETOS=linux", "TARGETARCH="+arch)
					if out, err := cmd.CombinedOutput(); err != nil {
						t.Fatalf("RUN %s: %v\n%s", ins.args, err, out)
					}
				}
			}
			out := filepath.Join(work, strings.TrimPrefix(stage.finalCopyFrom, stage.workdir+"/"))
			entries, err := os.ReadDir(out)
			if err != nil {
				t.Fatalf("the final stage copies from %s, which the build stage did not write: %v", stage.finalCopyFrom, err)
			}
			var got []string
			for _, e := range entries {
				got = append(got, e.Name())
				info, err := exec.Command("go", "version", "-m", filepath.Join(out, e.Name())).CombinedOutput()
				if err != nil {
					t.Fatalf("go version -m %s: %v\n%s", e.Name(), err, info)
				}
				for _, setting := range []string{"GOOS=linux", "GOARCH=" + arch, "CGO_ENABLED=0", "-trimpath=true"} {
					if !strings.Contains(string(info), "build\t"+setting+"\n") {
						t.Errorf("%s was not built with %s:\n%s", e.Name(), setting, info)
					}
				}
			}
			if slices.Sort(got); !slices.Equal(got, want) {
				t.Errorf("the image's binaries %v, want every command of cmd/ %v", got, want)
			}
		})
	}
}

type dockerfileStage struct {
	workdir       string
	instructions  []instruction // COPY (local sources only) and RUN, in order
	finalCopyFrom string        // what the last stage copies from this one
}

type instruction struct{ op, args string }

// buildStage parses the Dockerfile's stage "build": its WORKDIR, COPY and RUN instructions
// (continuation lines joined, RUN's --mount options dropped, as they only cache), and the source
// of the later stage's COPY --from=build.
func buildStage(t *testing.T) dockerfileStage {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	var cur string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(l), "#") || strings.TrimSpace(l) == "" {
			continue
		}
		if strings.HasSuffix(l, `\`) {
			cur += strings.TrimSuffix(l, `\`) + " "
			continue
		}
		lines = append(lines, strings.TrimSpace(cur+l))
		cur = ""
	}
	var st dockerfileStage
	inBuild := false
	for _, l := range lines {
		op, args, _ := strings.Cut(l, " ")
		switch {
		case op == "FROM":
			inBuild = strings.HasSuffix(args, " AS build")
		case op == "COPY" && strings.HasPrefix(args, "--from=build "):
			st.finalCopyFrom = strings.TrimSuffix(strings.Fields(args)[1], "/")
		case !inBuild:
		case op == "WORKDIR":
			st.workdir = args
		case op == "COPY":
			st.instructions = append(st.instructions, instruction{op, args})
		case op == "RUN":
			for strings.HasPrefix(args, "--") {
				_, args, _ = strings.Cut(args, " ")
				args = strings.TrimSpace(args)
			}
			st.instructions = append(st.instructions, instruction{op, args})
		}
	}
	if st.workdir == "" || st.finalCopyFrom == "" || len(st.instructions) < 3 {
		t.Fatalf("the Dockerfile has no stage \"build\" with a WORKDIR, COPY and RUN lines, and a later COPY --from=build: %+v", st)
	}
	return st
}

// copyContext does a COPY SRC... DEST of the build context (the repository) into work.
func copyContext(t *testing.T, args, work string, ignored []string) {
	t.Helper()
	f := strings.Fields(args)
	srcs, dest := f[:len(f)-1], filepath.Join(work, f[len(f)-1])
	for _, src := range srcs {
		from := filepath.Join(root, src)
		err := filepath.Walk(from, func(p string, info os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			for _, ig := range ignored {
				if rel == ig || strings.HasPrefix(rel, ig+"/") {
					return filepath.SkipDir
				}
			}
			if info.IsDir() {
				return nil
			}
			// A directory source copies its contents into DEST; a file goes into DEST/.
			to := filepath.Join(dest, filepath.Base(p))
			if sub, _ := filepath.Rel(from, p); sub != "." {
				to = filepath.Join(dest, sub)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
				return err
			}
			return os.WriteFile(to, b, info.Mode().Perm())
		})
		if err != nil {
			t.Fatalf("COPY %s: %v", args, err)
		}
	}
}

// hack/release.sh check holds every file that names the release to VERSION, and a drifted one
// fails it by name; set-version moves them all, the chart's version in SemVer form.
func TestVersionInOnePlace(t *testing.T) {
	v := testenv.ReleaseVersion()
	if out, err := exec.Command(filepath.Join(root, "hack", "release.sh"), "check").CombinedOutput(); err != nil {
		t.Fatalf("hack/release.sh check: %v\n%s", err, out)
	}
	// The chart's own default image is the release's.
	containers, _, _ := unstructured.NestedSlice(render(t)["Deployment/j-junction-operator"].Object, "spec", "template", "spec", "containers")
	if got := containers[0].(map[string]any)["image"]; got != "ghcr.io/junction-atsss/junction:"+v {
		t.Errorf("the operator's image is %v, not ghcr.io/junction-atsss/junction:%s", got, v)
	}

	// A copy of the files release.sh reads.
	tree := t.TempDir()
	for _, p := range []string{"VERSION", "hack/release.sh", "charts/junction/Chart.yaml", "config/manager/kustomization.yaml",
		"ue-daemonset/kustomization.yaml", "gitops/flux/junction.yaml", "gitops/argocd/application.yaml"} {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		to := filepath.Join(tree, p)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	release := filepath.Join(tree, "hack", "release.sh")
	out, err := exec.Command(release, "set-version", "v7.8.9-rc.1").CombinedOutput()
	if err != nil {
		t.Fatalf("set-version v7.8.9-rc.1: %v\n%s", err, out)
	}
	chartYAML, _ := os.ReadFile(filepath.Join(tree, "charts", "junction", "Chart.yaml"))
	for _, want := range []string{"\nversion: 7.8.9-rc.1\n", "\nappVersion: v7.8.9-rc.1\n"} {
		if !strings.Contains(string(chartYAML), want) {
			t.Errorf("after set-version, Chart.yaml lacks %q:\n%s", want, chartYAML)
		}
	}
	kust := filepath.Join(tree, "ue-daemonset", "kustomization.yaml")
	b, _ := os.ReadFile(kust)
	if err := os.WriteFile(kust, []byte(strings.Replace(string(b), "newTag: v7.8.9-rc.1", "newTag: v7.8.8", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(release, "check").CombinedOutput(); err == nil || !strings.Contains(string(out), "ue-daemonset/kustomization.yaml") {
		t.Errorf("check with a drifted ue-daemonset tag: %v, want a failure naming the file:\n%s", err, out)
	}
	if out, err := exec.Command(release, "set-version", "7.8.9").CombinedOutput(); err == nil || !strings.Contains(string(out), "vMAJOR") {
		t.Errorf("set-version 7.8.9: %v, want a failure saying the form:\n%s", err, out)
	}
}

// The release's dry run packages the chart (lint --strict passes) pointing at the release's image
// in the registry given, prints the steps it cannot run here (a multi-arch buildx push, the OCI
// push of that .tgz, the tag), and the .tgz installs into a real API server, image.digest winning
// over the tag.
func TestPackagedChartInstalls(t *testing.T) {
	v := testenv.ReleaseVersion()
	semver := strings.TrimPrefix(v, "v")
	outDir := t.TempDir()
	cmd := exec.Command(filepath.Join(root, "hack", "release.sh"), "--dry-run")
	cmd.Env = append(os.Environ(), "OUT="+outDir, "REGISTRY=registry.example:5000/edge", "HELM="+helm)
	plan, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hack/release.sh --dry-run: %v\n%s", err, plan)
	}
	tgz := filepath.Join(outDir, "junction-"+semver+".tgz")
	if strings.Contains(string(plan), "[release] released") {
		t.Errorf("the dry run says it released what it only printed:\n%s", plan)
	}
	for _, want := range []string{
		"would run: docker buildx build --platform linux/amd64,linux/arm64 --build-arg VERSION=" + v + " ",
		"--tag registry.example:5000/edge/junction:" + v + " ",
		"would run: " + helm + " push " + tgz + " oci://registry.example:5000/edge/charts\n",
		"would run: git tag -a " + v + " ",
	} {
		if !strings.Contains(string(plan), want) {
			t.Errorf("the dry run's plan lacks %q:\n%s", want, plan)
		}
	}
	if out, err := run(t, "show", "chart", tgz); err != nil || !strings.Contains(out, "\nversion: "+semver+"\n") || !strings.Contains(out, "\nappVersion: "+v+"\n") {
		t.Fatalf("helm show chart %s: %v\n%s", tgz, err, out)
	}

	c := startCluster(t)
	digest := "sha256:" + strings.Repeat("0f", 32)
	for _, tc := range []struct {
		release string
		args    []string
		image   string
	}{
		{"from-tgz", []string{"--set", "softupf.enabled=true", "--set", "pipeline.create=true"}, "registry.example:5000/edge/junction:" + v},
		{"by-digest", []string{"--set", "image.tag=v0.0.1", "--set", "image.digest=" + digest}, "registry.example:5000/edge/junction@" + digest},
	} {
		if out, err := run(t, append([]string{"install", tc.release, tgz, "-n", tc.release, "--create-namespace", "--kubeconfig", c.kubeconfig}, tc.args...)...); err != nil {
			t.Fatalf("helm install %s: %v\n%s", tgz, err, out)
		}
		d := &appsv1.Deployment{}
		key := client.ObjectKey{Namespace: tc.release, Name: tc.release + "-junction-operator"}
		if err := c.k8s.Get(context.Background(), key, d); err != nil {
			t.Fatalf("the packaged chart's operator: %v", err)
		}
		if got := d.Spec.Template.Spec.Containers[0].Image; got != tc.image {
			t.Errorf("%s: the operator runs %s, want %s", tc.release, got, tc.image)
		}
	}
}
