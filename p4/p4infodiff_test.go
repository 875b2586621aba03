package p4

// A field-by-field comparison of two P4Info messages that names what differs:
// repeated messages are matched by preamble name, name or ID rather than by
// position, so a message reads like
//   tables[sessions].match_fields[session_addr].bitwidth: source has 32, p4info.txtpb has 16

import (
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

type differ struct {
	wantName, gotName string
	out               []string
}

// diffP4Info compares want (named wantName in messages) with got.
func diffP4Info(want, got proto.Message, wantName, gotName string) []string {
	d := &differ{wantName: wantName, gotName: gotName}
	d.message("", want.ProtoReflect(), got.ProtoReflect())
	sort.Strings(d.out)
	return d.out
}

func (d *differ) report(path, format string, args ...any) {
	d.out = append(d.out, strings.TrimPrefix(path, ".")+": "+fmt.Sprintf(format, args...))
}

func (d *differ) message(path string, want, got protoreflect.Message) {
	fields := want.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		p := path + "." + string(fd.Name())
		hasW, hasG := want.Has(fd), got.Has(fd)
		switch {
		case !hasW && !hasG:
			continue
		case fd.IsList():
			d.list(p, fd, want.Get(fd).List(), got.Get(fd).List())
		case fd.IsMap():
			d.mapField(p, fd, want.Get(fd).Map(), got.Get(fd).Map())
		case fd.Kind() == protoreflect.MessageKind:
			if hasW != hasG {
				d.report(p, "set in %s, not in %s", d.which(hasW), d.which(!hasW))
				continue
			}
			d.message(p, want.Get(fd).Message(), got.Get(fd).Message())
		default:
			d.scalar(p, fd, want.Get(fd), got.Get(fd))
		}
	}
}

func (d *differ) which(inWant bool) string {
	if inWant {
		return d.wantName
	}
	return d.gotName
}

func (d *differ) scalar(path string, fd protoreflect.FieldDescriptor, want, got protoreflect.Value) {
	if want.Equal(got) {
		return
	}
	d.report(path, "%s has %s, %s has %s", d.wantName, show(fd, want), d.gotName, show(fd, got))
}

func show(fd protoreflect.FieldDescriptor, v protoreflect.Value) string {
	switch fd.Kind() {
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
		return fmt.Sprint(v.Enum())
	case protoreflect.StringKind:
		return fmt.Sprintf("%q", v.String())
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		if strings.HasSuffix(string(fd.Name()), "id") && v.Uint() > 0xffffff {
			return fmt.Sprintf("0x%08x", v.Uint())
		}
	}
	return fmt.Sprint(v.Interface())
}

// key names an element of a repeated message field.
func key(m protoreflect.Message, index int) string {
	fields := m.Descriptor().Fields()
	if fd := fields.ByName("preamble"); fd != nil && m.Has(fd) {
		return m.Get(fd).Message().Get(fd.Message().Fields().ByName("name")).String()
	}
	if fd := fields.ByName("name"); fd != nil && fd.Kind() == protoreflect.StringKind && m.Get(fd).String() != "" {
		return m.Get(fd).String()
	}
	if fd := fields.ByName("id"); fd != nil && m.Has(fd) {
		return show(fd, m.Get(fd))
	}
	return fmt.Sprintf("#%d", index)
}

func (d *differ) list(path string, fd protoreflect.FieldDescriptor, want, got protoreflect.List) {
	if fd.Kind() != protoreflect.MessageKind {
		w, g := listStrings(fd, want), listStrings(fd, got)
		if strings.Join(w, "\x00") != strings.Join(g, "\x00") {
			d.report(path, "%s has [%s], %s has [%s]", d.wantName, strings.Join(w, ", "), d.gotName, strings.Join(g, ", "))
		}
		return
	}
	index := func(l protoreflect.List) (map[string]protoreflect.Message, []string) {
		m := map[string]protoreflect.Message{}
		var order []string
		for i := 0; i < l.Len(); i++ {
			msg := l.Get(i).Message()
			k := key(msg, i)
			if _, dup := m[k]; dup {
				d.report(path+"["+k+"]", "appears more than once")
			}
			m[k] = msg
			order = append(order, k)
		}
		return m, order
	}
	wm, worder := index(want)
	gm, gorder := index(got)
	for _, k := range worder {
		if g, ok := gm[k]; ok {
			d.message(path+"["+k+"]", wm[k], g)
		} else {
			d.report(path+"["+k+"]", "in %s, missing from %s", d.wantName, d.gotName)
		}
	}
	for _, k := range gorder {
		if _, ok := wm[k]; !ok {
			d.report(path+"["+k+"]", "in %s, not in %s", d.gotName, d.wantName)
		}
	}
}

func listStrings(fd protoreflect.FieldDescriptor, l protoreflect.List) []string {
	var out []string
	for i := 0; i < l.Len(); i++ {
		out = append(out, show(fd, l.Get(i)))
	}
	return out
}

func (d *differ) mapField(path string, fd protoreflect.FieldDescriptor, want, got protoreflect.Map) {
	vd := fd.MapValue()
	want.Range(func(k protoreflect.MapKey, wv protoreflect.Value) bool {
		p := path + "[" + k.String() + "]"
		gv := got.Get(k)
		if !got.Has(k) {
			d.report(p, "in %s, missing from %s", d.wantName, d.gotName)
		} else if vd.Kind() == protoreflect.MessageKind {
			d.message(p, wv.Message(), gv.Message())
		} else {
			d.scalar(p, vd, wv, gv)
		}
		return true
	})
	got.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
		if !want.Has(k) {
			d.report(path+"["+k.String()+"]", "in %s, not in %s", d.gotName, d.wantName)
		}
		return true
	})
}
