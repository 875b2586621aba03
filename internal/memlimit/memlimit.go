// Package memlimit gives the Go runtime a soft memory limit below the container's.
//
// Without one, the collector lets the heap grow to twice what is live (GOGC=100) whatever the
// container's limit, and the kernel kills the process once half of the limit is live (the
// operator's heap grows with its sessions: charts/junction/README.md, "Memory"). With a limit,
// the collector runs more often as the heap nears it, and the process lives as long as what is
// live fits.
//
// Go 1.24 does not read the container's limit itself (nor, before 1.25, its CPU quota): this
// package does, from the memory cgroup, where the kubelet puts resources.limits.memory.
package memlimit

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
)

// share is the part of the cgroup's limit the Go runtime may take; the rest is for what the cgroup
// is charged and the runtime does not count: the binary's code, memory mapped outside the Go heap
// (the software UPF's AF_XDP rings), and the kernel's socket buffers and page cache.
const share = 0.9

// unlimited: cgroup v1 writes "no limit" as the largest page-aligned int64
// (9223372036854771712); anything from 2^62 on is no limit a machine has.
const unlimited = int64(1) << 62

// Apply sets the runtime's memory limit to share of the memory cgroup's, unless GOMEMLIMIT is
// set (the runtime took that already) or no cgroup limits the process. It says what it did, for
// the caller's start-up log line.
func Apply() string {
	if v, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		return "GOMEMLIMIT=" + v + " (from the environment)"
	}
	limit, where, err := cgroupLimit("/")
	switch {
	case err != nil:
		return "none: " + err.Error()
	case limit <= 0:
		return "none: no memory cgroup limits this process"
	}
	soft := int64(float64(limit) * share)
	debug.SetMemoryLimit(soft)
	return fmt.Sprintf("%d bytes, %.0f%% of %s's %d", soft, share*100, where, limit)
}

// cgroupLimit is the smallest memory limit of the process's memory cgroup and its ancestors (0:
// none), and the file that holds it. root is where the file system is ("/" but in tests): the
// cgroup file system is looked for under root/sys/fs/cgroup, where container runtimes mount it.
// Version 1's memory controller is read where it is mounted (a host that mounts both versions
// keeps memory in version 1), else version 2's unified hierarchy.
func cgroupLimit(root string) (int64, string, error) {
	self, err := os.ReadFile(path.Join(root, "proc/self/cgroup"))
	if err != nil {
		return 0, "", err
	}
	v1, v2, err := cgroupPaths(self)
	if err != nil {
		return 0, "", err
	}
	base := path.Join(root, "sys/fs/cgroup")
	switch {
	case v1 != "":
		return smallest(path.Join(base, "memory"), v1, "memory.limit_in_bytes")
	case v2 != "":
		return smallest(base, v2, "memory.max")
	}
	return 0, "", nil
}

// cgroupPaths reads /proc/self/cgroup ("hierarchy:controllers:path" a line): the path in version
// 1's memory hierarchy and the path in version 2's.
func cgroupPaths(b []byte) (v1, v2 string, err error) {
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		f := strings.SplitN(s.Text(), ":", 3)
		if len(f) != 3 {
			return "", "", fmt.Errorf("/proc/self/cgroup: line %q is not hierarchy:controllers:path", s.Text())
		}
		switch {
		case f[0] == "0" && f[1] == "":
			v2 = f[2]
		case slices.Contains(strings.Split(f[1], ","), "memory"):
			v1 = f[2]
		}
	}
	return v1, v2, s.Err()
}

// smallest reads file in the cgroup at p under mount and in each of its ancestors, and returns
// the smallest limit among them. A directory that is not there is skipped: inside a container
// the mount often shows the container's own cgroup as its root, while /proc/self/cgroup still
// names its path on the host.
func smallest(mount, p, file string) (int64, string, error) {
	var best int64
	var where string
	for dir := path.Clean("/" + p); ; dir = path.Dir(dir) {
		name := path.Join(mount, dir, file)
		b, err := os.ReadFile(name)
		switch {
		case os.IsNotExist(err):
		case err != nil:
			return 0, "", err
		default:
			v, err := parseLimit(b)
			if err != nil {
				return 0, "", fmt.Errorf("%s: %w", name, err)
			}
			if v > 0 && (best == 0 || v < best) {
				best, where = v, name
			}
		}
		if dir == "/" {
			return best, where, nil
		}
	}
}

// parseLimit reads a memory limit file: bytes, or "max" (version 2) or a value from 2^62 on
// (version 1) for none (0).
func parseLimit(b []byte) (int64, error) {
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("memory limit %q is neither bytes nor \"max\"", s)
	}
	if v >= unlimited {
		return 0, nil
	}
	return v, nil
}
