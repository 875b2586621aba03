package programmer

import (
	"reflect"
	"testing"
)

// A round writes an owner only if all its inserts fit (issue 27, item 6): in the room the
// round's deletes leave, less what the owners before it in the round take.
func TestFitInserts(t *testing.T) {
	ins := func(owner string, tables ...any) ownerInserts {
		o := ownerInserts{owner: owner, tables: map[string]int{}}
		for i := 0; i < len(tables); i += 2 {
			o.tables[tables[i].(string)] = tables[i+1].(int)
		}
		return o
	}
	for _, tc := range []struct {
		name   string
		room   map[string]int
		owners []ownerInserts
		want   map[string]noRoom
	}{
		{"an owner that fits exactly is written", map[string]int{"applications": 3},
			[]ownerInserts{ins("a", "applications", 3)}, map[string]noRoom{}},
		{"one entry more than the room refuses the whole owner", map[string]int{"applications": 3},
			[]ownerInserts{ins("a", "applications", 4)}, map[string]noRoom{"a": {"applications", 4, 3}}},
		{"an owner after one that took the room does not fit", map[string]int{"applications": 2},
			[]ownerInserts{ins("a", "applications", 1), ins("b", "applications", 2)}, map[string]noRoom{"b": {"applications", 2, 1}}},
		{"a refused owner takes no room from those after it", map[string]int{"applications": 2},
			[]ownerInserts{ins("a", "applications", 3), ins("b", "applications", 2)}, map[string]noRoom{"a": {"applications", 3, 2}}},
		{"an owner short in one table takes nothing in the others", map[string]int{"sessions": 1, "uplink_tunnels": 1},
			[]ownerInserts{ins("a", "sessions", 2, "uplink_tunnels", 1), ins("b", "sessions", 1, "uplink_tunnels", 1)}, map[string]noRoom{"a": {"sessions", 2, 1}}},
		{"a table of unknown size is the device's to refuse", map[string]int{},
			[]ownerInserts{ins("a", "applications", 5000)}, map[string]noRoom{}},
		{"a table holding more than its size has no room", map[string]int{"applications": -2},
			[]ownerInserts{ins("a", "applications", 1)}, map[string]noRoom{"a": {"applications", 1, 0}}},
		{"an owner with nothing to insert (modifies only) always fits", map[string]int{"applications": 0},
			[]ownerInserts{ins("a")}, map[string]noRoom{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			room := map[string]int{}
			for k, v := range tc.room {
				room[k] = v
			}
			if got := fitInserts(room, tc.owners); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("fitInserts = %+v, want %+v", got, tc.want)
			}
			if !reflect.DeepEqual(room, tc.room) {
				t.Errorf("fitInserts changed its room argument: %v", room)
			}
		})
	}
}
