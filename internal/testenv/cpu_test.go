package testenv

import (
	"strings"
	"testing"
)

// The fields of proc(5)'s /proc/stat "cpu" line, in USER_HZ: user nice system idle iowait irq
// softirq steal guest guest_nice; guest time is already in user's.
func TestStealSinceIsStealOverAllCPUTime(t *testing.T) {
	before, err := parseCPUTimes("cpu  100 0 50 800 10 0 5 35 7 0")
	if err != nil {
		t.Fatal(err)
	}
	// 400 more jiffies: 100 user, 100 system, 100 idle, 100 steal (and 50 guest, within user).
	after, err := parseCPUTimes("cpu  200 0 150 900 10 0 5 135 57 0")
	if err != nil {
		t.Fatal(err)
	}
	if got := after.StealSince(before); got != 0.25 {
		t.Errorf("steal share = %v, want 0.25 (100 of 400 jiffies)", got)
	}
	if got := before.StealSince(after); got != 0 {
		t.Errorf("steal share of counters going back = %v, want 0", got)
	}
}

func TestParseCPUTimesNamesABadLine(t *testing.T) {
	for _, line := range []string{"intr 1 2 3", "cpu 1 2 3", "cpu 1 2 3 4 5 6 x 8"} {
		if _, err := parseCPUTimes(line); err == nil || !strings.Contains(err.Error(), "/proc/stat") {
			t.Errorf("%q: err = %v, want an error naming /proc/stat", line, err)
		}
	}
}

func TestReadCPUTimesReadsThisMachine(t *testing.T) {
	c, err := ReadCPUTimes()
	if err != nil {
		t.Fatal(err)
	}
	if c.total == 0 || c.steal > c.total {
		t.Errorf("CPU times %+v: want some time, steal within it", c)
	}
}
