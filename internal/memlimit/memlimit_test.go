package memlimit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// fakeRoot writes files (path relative to the root: contents) into a directory that stands for "/".
func fakeRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// The files as the kernel writes them (Documentation/admin-guide/cgroup-v1/memory.rst and
// cgroup-v2.rst): version 1's "no limit" is 9223372036854771712, version 2's is "max".
func TestCgroupLimit(t *testing.T) {
	const hybrid = "12:pids:/kubepods/pod1/c1\n4:memory:/kubepods/pod1/c1\n1:name=systemd:/kubepods/pod1/c1\n0::/kubepods/pod1/c1\n"
	for _, c := range []struct {
		name  string
		files map[string]string
		want  int64
		where string // the file's path under the root
		err   string
	}{{
		name: "version 1, the container's cgroup limited",
		files: map[string]string{"proc/self/cgroup": hybrid,
			"sys/fs/cgroup/memory/kubepods/pod1/c1/memory.limit_in_bytes": "536870912\n",
			"sys/fs/cgroup/memory/kubepods/pod1/memory.limit_in_bytes":    "9223372036854771712\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes":                  "9223372036854771712\n",
			"sys/fs/cgroup/unified/kubepods/pod1/c1/memory.max":           "1073741824\n"}, // not where version 1 keeps memory
		want: 536870912, where: "sys/fs/cgroup/memory/kubepods/pod1/c1/memory.limit_in_bytes",
	}, {
		name: "version 1, an ancestor's limit is smaller",
		files: map[string]string{"proc/self/cgroup": hybrid,
			"sys/fs/cgroup/memory/kubepods/pod1/c1/memory.limit_in_bytes": "9223372036854771712\n",
			"sys/fs/cgroup/memory/kubepods/memory.limit_in_bytes":         "2147483648\n"},
		want: 2147483648, where: "sys/fs/cgroup/memory/kubepods/memory.limit_in_bytes",
	}, {
		name: "version 1 in a container: the mount's root is the container's cgroup",
		files: map[string]string{"proc/self/cgroup": hybrid,
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "268435456\n"},
		want: 268435456, where: "sys/fs/cgroup/memory/memory.limit_in_bytes",
	}, {
		name: "version 1, no limit anywhere",
		files: map[string]string{"proc/self/cgroup": hybrid,
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"},
	}, {
		name: "version 2 with a cgroup namespace",
		files: map[string]string{"proc/self/cgroup": "0::/\n",
			"sys/fs/cgroup/memory.max": "1073741824\n"},
		want: 1073741824, where: "sys/fs/cgroup/memory.max",
	}, {
		name: "version 2, the pod's limit under the container's max",
		files: map[string]string{"proc/self/cgroup": "0::/kubepods.slice/pod1.slice/c1.scope\n",
			"sys/fs/cgroup/kubepods.slice/pod1.slice/c1.scope/memory.max": "max\n",
			"sys/fs/cgroup/kubepods.slice/pod1.slice/memory.max":          "805306368\n",
			"sys/fs/cgroup/kubepods.slice/memory.max":                     "max\n"},
		want: 805306368, where: "sys/fs/cgroup/kubepods.slice/pod1.slice/memory.max",
	}, {
		name:  "version 2, max",
		files: map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "max\n"},
	}, {
		name:  "no memory cgroup",
		files: map[string]string{"proc/self/cgroup": "1:name=systemd:/\n"},
	}, {
		name:  "a line that is not hierarchy:controllers:path",
		files: map[string]string{"proc/self/cgroup": "4-memory-/\n"},
		err:   `line "4-memory-/"`,
	}, {
		name:  "a limit that is not a number",
		files: map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "1G\n"},
		err:   `memory.max: memory limit "1G" is neither bytes nor "max"`,
	}} {
		t.Run(c.name, func(t *testing.T) {
			root := fakeRoot(t, c.files)
			got, where, err := cgroupLimit(root)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one with %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("limit %d, want %d", got, c.want)
			}
			if c.where != "" && where != filepath.Join(root, c.where) {
				t.Errorf("read from %s, want %s", where, c.where)
			}
		})
	}
}

// childEnv marks the test binary run as the child of TestApplyInARealCgroup.
const childEnv = "JUNCTION_MEMLIMIT_CHILD"

// TestApplyInARealCgroup starts a process in a memory cgroup of its own with a 300 MB limit (as
// root, the kubelet's way: the limit is set before the process is moved in) and checks the limit
// that process's runtime took: 90% of what the kernel holds (the kernel rounds the limit down to
// a page). Then, with GOMEMLIMIT set, that the runtime keeps it.
func TestApplyInARealCgroup(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		fmt.Printf("applied: %s\nlimit: %d\n", Apply(), debug.SetMemoryLimit(-1))
		return
	}
	if os.Geteuid() != 0 {
		t.Fatal("needs root: it makes a memory cgroup (CI runs as root)")
	}
	dir, file := newCgroup(t)
	if err := os.WriteFile(filepath.Join(dir, file), []byte("300000000"), 0o644); err != nil {
		t.Fatal(err)
	}
	held, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	kernel, err := strconv.ParseInt(strings.TrimSpace(string(held)), 10, 64)
	if err != nil || kernel > 300000000 || kernel < 300000000-1<<16 {
		t.Fatalf("the kernel holds %q for a limit of 300000000", held)
	}
	run := func(env ...string) string {
		cmd := exec.Command("sh", "-c", `echo $$ > "$0/cgroup.procs" && exec "$1" -test.run '^TestApplyInARealCgroup$'`, dir, os.Args[0])
		cmd.Env = append(append(os.Environ(), childEnv+"=1"), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return string(out)
	}
	out := run()
	if want := fmt.Sprintf("limit: %d\n", int64(float64(kernel)*0.9)); !strings.Contains(out, want) {
		t.Errorf("in a cgroup limited to %d bytes the runtime took %q, want %q", kernel, out, want)
	}
	if !strings.Contains(out, filepath.Join(dir, file)) {
		t.Errorf("the child did not say which file limits it (%s): %q", filepath.Join(dir, file), out)
	}
	out = run("GOMEMLIMIT=123MiB")
	if want := fmt.Sprintf("limit: %d\n", 123<<20); !strings.Contains(out, want) || !strings.Contains(out, "GOMEMLIMIT=123MiB (from the environment)") {
		t.Errorf("with GOMEMLIMIT=123MiB the child said %q, want %q", out, want)
	}
}

// newCgroup makes a memory cgroup for the test and returns its directory and its limit file:
// under this process's own in version 1's memory hierarchy, else at version 2's root (a cgroup
// with processes of its own cannot have children that use controllers).
func newCgroup(t *testing.T) (dir, file string) {
	t.Helper()
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	v1, _, err := cgroupPaths(self)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("junction-memlimit-test-%d", os.Getpid())
	if _, err := os.Stat("/sys/fs/cgroup/memory/memory.limit_in_bytes"); err == nil && v1 != "" {
		dir, file = filepath.Join("/sys/fs/cgroup/memory", v1, name), "memory.limit_in_bytes"
	} else {
		dir, file = filepath.Join("/sys/fs/cgroup", name), "memory.max"
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("making a memory cgroup: %v", err)
	}
	t.Cleanup(func() {
		// Its processes have ended; a cgroup without processes is removed with rmdir.
		if err := os.Remove(dir); err != nil {
			t.Errorf("removing the test's cgroup: %v", err)
		}
	})
	return dir, file
}
