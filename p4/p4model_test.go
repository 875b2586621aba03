package p4

// From parsed declarations to the P4Info that p4c would write for them, the
// way control-plane/p4RuntimeSerializer.cpp does it: absolute @name without
// the leading dot, @id as given, match fields and action parameters numbered
// 1..n in declaration order, widths resolved through typedefs, const default
// actions, @defaultonly action references, registers with their element
// width, counters with their unit, digests with their struct in type_info,
// controller headers named by @controller_header. v1model digests cannot
// carry @id, so their ID is p4c's hash of the name.

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
)

// P4Info ID prefixes (p4/config/v1/p4info.proto, P4Ids.Prefix).
const (
	prefixAction           = uint32(p4configv1.P4Ids_ACTION)
	prefixTable            = uint32(p4configv1.P4Ids_TABLE)
	prefixControllerHeader = uint32(p4configv1.P4Ids_CONTROLLER_HEADER)
	prefixCounter          = uint32(p4configv1.P4Ids_COUNTER)
	prefixRegister         = uint32(p4configv1.P4Ids_REGISTER)
	prefixDigest           = uint32(p4configv1.P4Ids_DIGEST)
)

// built is a program's P4Info as derived from its source, with every problem
// found on the way.
type built struct {
	info *p4configv1.P4Info
	errs []string
}

func (b *built) errorf(pos, format string, args ...any) {
	b.errs = append(b.errs, pos+": "+fmt.Sprintf(format, args...))
}

// jenkinsOneAtATime is p4c's hash for IDs that carry no @id annotation
// (P4RuntimeSymbolTable::jenkinsOneAtATimeHash).
func jenkinsOneAtATime(s string) uint32 {
	var h uint32
	for i := 0; i < len(s); i++ {
		h += uint32(s[i])
		h += h << 10
		h ^= h >> 6
	}
	h += h << 3
	h ^= h >> 11
	h += h << 15
	return h
}

func hashedID(prefix uint32, name string) uint32 {
	return prefix<<24 | jenkinsOneAtATime(name)&0xffffff
}

var widthPrefixed = regexp.MustCompile(`^[0-9]+[ws](.+)$`)

// eval evaluates a constant expression: numbers, #defines, consts, parentheses
// and left-to-right + - * <<.
func (prog *program) eval(toks []token) (int64, error) {
	return prog.evalDepth(toks, 0)
}

func (prog *program) evalDepth(toks []token, depth int) (int64, error) {
	if depth > 20 {
		return 0, fmt.Errorf("constant expression nests too deep")
	}
	if len(toks) == 0 {
		return 0, fmt.Errorf("empty constant expression")
	}
	var operands []int64
	var ops []string
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		var v int64
		switch {
		case t.text == "(":
			j, depthP := i+1, 1
			for ; j < len(toks) && depthP > 0; j++ {
				switch toks[j].text {
				case "(":
					depthP++
				case ")":
					depthP--
				}
			}
			inner, err := prog.evalDepth(toks[i+1:j-1], depth+1)
			if err != nil {
				return 0, err
			}
			v, i = inner, j-1
		case t.kind == tNumber:
			text := t.text
			if m := widthPrefixed.FindStringSubmatch(text); m != nil {
				text = m[1]
			}
			n, err := strconv.ParseInt(text, 0, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: bad number %q", t.pos, t.text)
			}
			v = n
		case t.kind == tIdent:
			if def, ok := prog.defines[t.text]; ok {
				pp := &preprocessor{}
				if err := pp.tokenize(def, "#define "+t.text, 1); err != nil {
					return 0, err
				}
				n, err := prog.evalDepth(pp.tokens, depth+1)
				if err != nil {
					return 0, err
				}
				v = n
			} else if c, ok := prog.consts[t.text]; ok {
				n, err := prog.evalDepth(c, depth+1)
				if err != nil {
					return 0, err
				}
				v = n
			} else {
				return 0, fmt.Errorf("%s: %s is not a known constant", t.pos, t.text)
			}
		case t.text == "+" || t.text == "-" || t.text == "*":
			ops = append(ops, t.text)
			continue
		case t.text == "<" && i+1 < len(toks) && toks[i+1].text == "<":
			ops = append(ops, "<<")
			i++
			continue
		default:
			return 0, fmt.Errorf("%s: unsupported %q in a constant expression", t.pos, t.text)
		}
		operands = append(operands, v)
	}
	if len(operands) != len(ops)+1 {
		return 0, fmt.Errorf("%s: malformed constant expression", toks[0].pos)
	}
	v := operands[0]
	for k, op := range ops {
		switch op {
		case "+":
			v += operands[k+1]
		case "-":
			v -= operands[k+1]
		case "*":
			v *= operands[k+1]
		case "<<":
			v <<= uint(operands[k+1])
		}
	}
	return v, nil
}

// width is the bit width of a type, through typedefs.
func (prog *program) width(t typeRef) (int, error) {
	for depth := 0; depth < 20; depth++ {
		switch t.name {
		case "bit", "int":
			w, err := prog.eval(t.width)
			return int(w), err
		case "bool":
			return 1, nil
		}
		next, ok := prog.typedefs[t.name]
		if !ok {
			return 0, fmt.Errorf("type %s has no known width", t.name)
		}
		t = next
	}
	return 0, fmt.Errorf("typedef chain of %s is too long", t.name)
}

// keyWidth resolves a key expression such as md.session_addr or
// hdr.ipv4.dst_addr[31:8] against the control's parameters.
func (prog *program) keyWidth(ctl *controlDecl, expr []token) (int, error) {
	var path []string
	slice := -1
	for i := 0; i < len(expr); i++ {
		t := expr[i]
		switch {
		case t.kind == tIdent:
			path = append(path, t.text)
		case t.text == ".":
		case t.text == "[" && i+4 < len(expr) && expr[i+2].text == ":" && expr[i+4].text == "]":
			hi, err1 := prog.eval(expr[i+1 : i+2])
			lo, err2 := prog.eval(expr[i+3 : i+4])
			if err1 != nil || err2 != nil || hi < lo {
				return 0, fmt.Errorf("%s: bad slice", t.pos)
			}
			slice = int(hi - lo + 1)
			i += 4
		default:
			return 0, fmt.Errorf("%s: unsupported key expression", t.pos)
		}
	}
	if len(path) < 2 {
		return 0, fmt.Errorf("key expression %q is not a field", tokensText(expr))
	}
	var cur typeRef
	found := false
	for _, p := range ctl.params {
		if p.name == path[0] {
			cur, found = p.typ, true
		}
	}
	if !found {
		return 0, fmt.Errorf("%s is not a parameter of control %s", path[0], ctl.name)
	}
	for _, name := range path[1:] {
		decl, ok := prog.types[cur.name]
		if !ok {
			return 0, fmt.Errorf("%s: %s is not a struct or header", tokensText(expr), cur.name)
		}
		next, ok := fieldType(decl, name)
		if !ok {
			return 0, fmt.Errorf("%s has no field %s", decl.name, name)
		}
		cur = next
	}
	if slice >= 0 {
		return slice, nil
	}
	return prog.width(cur)
}

func fieldType(decl *typeDecl, name string) (typeRef, bool) {
	for _, f := range decl.fields {
		if f.name == name {
			return f.typ, true
		}
	}
	return typeRef{}, false
}

func tokensText(toks []token) string {
	var parts []string
	for _, t := range toks {
		parts = append(parts, t.text)
	}
	return strings.Join(parts, "")
}

func annotationText(a annotation) string {
	if a.args == nil {
		return "@" + a.name
	}
	return "@" + a.name + "(" + tokensText(a.args) + ")"
}

// absoluteName returns the name P4Runtime sees for an object with
// @name(".x"), and whether the annotation is there and absolute.
func absoluteName(anns annotations) (string, bool) {
	a, ok := anns.get("name")
	if !ok || len(a.args) != 1 || a.args[0].kind != tString {
		return "", false
	}
	s, err := strconv.Unquote(a.args[0].text)
	if err != nil || !strings.HasPrefix(s, ".") || len(s) < 2 {
		return "", false
	}
	return s[1:], true
}

func (prog *program) idAnnotation(anns annotations) (uint32, bool) {
	a, ok := anns.get("id")
	if !ok {
		return 0, false
	}
	v, err := prog.eval(a.args)
	if err != nil || v <= 0 || v > 0xffffffff {
		return 0, false
	}
	return uint32(v), true
}

// objectID checks an object's @id and its prefix byte.
func (b *built) objectID(prog *program, pos, what, name string, anns annotations, prefix uint32) uint32 {
	id, ok := prog.idAnnotation(anns)
	if !ok {
		b.errorf(pos, "%s %s has no @id(0x%02x......) annotation", what, name, prefix)
		return 0
	}
	if id>>24 != prefix {
		b.errorf(pos, "%s %s has @id(0x%08x): the prefix byte must be 0x%02x", what, name, id, prefix)
	}
	return id
}

// reachable lists the controls instantiated, directly or through other
// controls, by the package instantiation, in declaration order.
func (prog *program) reachable() []*controlDecl {
	seen := map[string]bool{}
	queue := append([]string(nil), prog.roots...)
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		ctl, ok := prog.controls[name]
		if !ok || seen[name] {
			continue
		}
		seen[name] = true
		for _, inst := range ctl.instances {
			queue = append(queue, inst.typ.name)
		}
	}
	var out []*controlDecl
	for _, ctl := range prog.order {
		if seen[ctl.name] {
			out = append(out, ctl)
		}
	}
	return out
}

var matchTypes = map[string]p4configv1.MatchField_MatchType{
	"exact": p4configv1.MatchField_EXACT, "ternary": p4configv1.MatchField_TERNARY,
	"lpm": p4configv1.MatchField_LPM, "range": p4configv1.MatchField_RANGE,
	"optional": p4configv1.MatchField_OPTIONAL,
}

// Counter types: v1model's CounterType and TNA's CounterType_t members.
var counterUnits = map[string]p4configv1.CounterSpec_Unit{
	"packets":           p4configv1.CounterSpec_PACKETS,
	"bytes":             p4configv1.CounterSpec_BYTES,
	"packets_and_bytes": p4configv1.CounterSpec_BOTH,
	"PACKETS":           p4configv1.CounterSpec_PACKETS,
	"BYTES":             p4configv1.CounterSpec_BYTES,
	"PACKETS_AND_BYTES": p4configv1.CounterSpec_BOTH,
}

func bitstring(width int) *p4configv1.P4DataTypeSpec {
	return &p4configv1.P4DataTypeSpec{TypeSpec: &p4configv1.P4DataTypeSpec_Bitstring{
		Bitstring: &p4configv1.P4BitstringLikeTypeSpec{TypeSpec: &p4configv1.P4BitstringLikeTypeSpec_Bit{
			Bit: &p4configv1.P4BitTypeSpec{Bitwidth: int32(width)}}}}}
}

func preamble(id uint32, name string) *p4configv1.Preamble {
	return &p4configv1.Preamble{Id: id, Name: name, Alias: name}
}

// buildP4Info derives the P4Info of a parsed program.
func buildP4Info(prog *program, arch string) *built {
	b := &built{info: &p4configv1.P4Info{PkgInfo: &p4configv1.PkgInfo{Arch: arch}}}
	controls := prog.reachable()
	if len(controls) == 0 {
		b.errorf(prog.path, "no control is instantiated by the package")
	}
	actionIDs := map[*actionDecl]uint32{}
	referenced := map[*actionDecl]bool{}
	names := map[string]string{} // kind/name -> position, for duplicates

	claim := func(kind, name, pos string) {
		key := kind + "/" + name
		if prev, dup := names[key]; dup {
			b.errorf(pos, "%s %s is also declared at %s", kind, name, prev)
		}
		names[key] = pos
	}

	for _, ctl := range controls {
		for _, a := range ctl.actions {
			if _, hidden := a.anns.get("hidden"); hidden {
				continue
			}
			name, ok := absoluteName(a.anns)
			if !ok {
				b.errorf(a.pos, "action %s in control %s needs an absolute @name(\".%s\")", a.local, ctl.name, a.local)
				continue
			}
			claim("action", name, a.pos)
			id := b.objectID(prog, a.pos, "action", name, a.anns, prefixAction)
			actionIDs[a] = id
			act := &p4configv1.Action{Preamble: preamble(id, name)}
			for i, prm := range a.params {
				w, err := prog.width(prm.typ)
				if err != nil {
					b.errorf(prm.pos, "action %s parameter %s: %v", name, prm.name, err)
				}
				act.Params = append(act.Params, &p4configv1.Action_Param{Id: uint32(i + 1), Name: prm.name, Bitwidth: int32(w)})
			}
			b.info.Actions = append(b.info.Actions, act)
		}
	}

	for _, ctl := range controls {
		for _, t := range ctl.tables {
			b.addTable(prog, ctl, t, actionIDs, referenced, claim)
		}
		for _, inst := range ctl.instances {
			b.addInstance(prog, inst, claim)
		}
		for _, d := range ctl.digests {
			b.addDigestCall(prog, d, claim)
		}
	}
	for _, ctl := range controls {
		for _, a := range ctl.actions {
			if _, hidden := a.anns.get("hidden"); !hidden && !referenced[a] {
				b.errorf(a.pos, "action %s is not used by any table: p4c would drop it (or mark it @hidden)", a.local)
			}
		}
	}
	b.addControllerHeaders(prog, claim)
	b.checkIDs()
	return b
}

func (b *built) addTable(prog *program, ctl *controlDecl, t *tableDecl, actionIDs map[*actionDecl]uint32,
	referenced map[*actionDecl]bool, claim func(kind, name, pos string)) {
	name, ok := absoluteName(t.anns)
	if !ok {
		b.errorf(t.pos, "table %s in control %s needs an absolute @name(\".%s\")", t.local, ctl.name, t.local)
		return
	}
	claim("table", name, t.pos)
	if !ctl.applied[t.local] {
		b.errorf(t.pos, "table %s is never applied in control %s", name, ctl.name)
	}
	tbl := &p4configv1.Table{Preamble: preamble(b.objectID(prog, t.pos, "table", name, t.anns, prefixTable), name)}
	for i, k := range t.keys {
		fname, ok := k.anns.get("name")
		if !ok || len(fname.args) != 1 || fname.args[0].kind != tString {
			b.errorf(k.pos, "table %s key %s needs @name(\"...\")", name, tokensText(k.expr))
			continue
		}
		fieldName, _ := strconv.Unquote(fname.args[0].text)
		w, err := prog.keyWidth(ctl, k.expr)
		if err != nil {
			b.errorf(k.pos, "table %s key %s: %v", name, fieldName, err)
		}
		mf := &p4configv1.MatchField{Id: uint32(i + 1), Name: fieldName, Bitwidth: int32(w)}
		if mt, ok := matchTypes[k.match]; ok {
			mf.Match = &p4configv1.MatchField_MatchType_{MatchType: mt}
		} else {
			mf.Match = &p4configv1.MatchField_OtherMatchType{OtherMatchType: k.match}
		}
		tbl.MatchFields = append(tbl.MatchFields, mf)
	}
	local := func(ref, pos string) *actionDecl {
		for _, a := range ctl.actions {
			if a.local == ref {
				return a
			}
		}
		b.errorf(pos, "table %s refers to action %s, which control %s does not declare", name, ref, ctl.name)
		return nil
	}
	inList := false
	for _, ref := range t.actions {
		a := local(ref.local, ref.pos)
		if a == nil {
			continue
		}
		referenced[a] = true
		inList = inList || ref.local == t.defaultAction
		ar := &p4configv1.ActionRef{Id: actionIDs[a]}
		for _, ann := range ref.anns {
			ar.Annotations = append(ar.Annotations, annotationText(ann))
		}
		_, defaultOnly := ref.anns.get("defaultonly")
		_, tableOnly := ref.anns.get("tableonly")
		switch {
		case defaultOnly:
			ar.Scope = p4configv1.ActionRef_DEFAULT_ONLY
		case tableOnly:
			ar.Scope = p4configv1.ActionRef_TABLE_ONLY
		}
		tbl.ActionRefs = append(tbl.ActionRefs, ar)
	}
	if t.defaultAction == "" {
		b.errorf(t.pos, "table %s has no default_action: every miss must say what happens", name)
	} else if !inList {
		b.errorf(t.pos, "table %s: default action %s is not in its actions list", name, t.defaultAction)
	} else if t.constDefault {
		if a := local(t.defaultAction, t.pos); a != nil {
			tbl.ConstDefaultActionId = actionIDs[a]
		}
	}
	if len(t.size) == 0 {
		b.errorf(t.pos, "table %s has no size", name)
	} else if size, err := prog.eval(t.size); err != nil {
		b.errorf(t.pos, "table %s size: %v", name, err)
	} else {
		tbl.Size = size
	}
	b.info.Tables = append(b.info.Tables, tbl)
}

func (b *built) addInstance(prog *program, inst *instanceDecl, claim func(kind, name, pos string)) {
	kind := ""
	switch inst.typ.name {
	case "register", "Register":
		kind = "register"
	case "counter", "Counter":
		kind = "counter"
	case "Digest":
		kind = "digest"
	case "direct_counter", "DirectCounter", "meter", "Meter", "direct_meter", "DirectMeter",
		"action_profile", "ActionProfile", "action_selector", "ActionSelector":
		b.errorf(inst.pos, "%s %s: this checker does not model %s; extend p4model_test.go", inst.typ.name, inst.name, inst.typ.name)
		return
	default:
		return
	}
	name, ok := absoluteName(inst.anns)
	if !ok {
		b.errorf(inst.pos, "%s %s needs an absolute @name(\".%s\")", kind, inst.name, inst.name)
		return
	}
	claim(kind, name, inst.pos)
	switch kind {
	case "register":
		id := b.objectID(prog, inst.pos, "register", name, inst.anns, prefixRegister)
		if len(inst.typ.args) == 0 || len(inst.args) == 0 {
			b.errorf(inst.pos, "register %s: element type or size missing", name)
			return
		}
		w, err := prog.width(inst.typ.args[0])
		if err != nil {
			b.errorf(inst.pos, "register %s element: %v", name, err)
		}
		size, err := prog.eval(inst.args[0])
		if err != nil {
			b.errorf(inst.pos, "register %s size: %v", name, err)
		}
		pre := preamble(id, name)
		for _, ann := range inst.anns {
			if ann.name != "name" && ann.name != "id" {
				pre.Annotations = append(pre.Annotations, annotationText(ann)) // @hidden
			}
		}
		b.info.Registers = append(b.info.Registers, &p4configv1.Register{
			Preamble: pre, TypeSpec: bitstring(w), Size: int32(size)})
	case "counter":
		id := b.objectID(prog, inst.pos, "counter", name, inst.anns, prefixCounter)
		if len(inst.args) != 2 || len(inst.args[1]) == 0 {
			b.errorf(inst.pos, "counter %s: expected (size, type)", name)
			return
		}
		size, err := prog.eval(inst.args[0])
		if err != nil {
			b.errorf(inst.pos, "counter %s size: %v", name, err)
		}
		unitTok := inst.args[1][len(inst.args[1])-1].text
		unit, ok := counterUnits[unitTok]
		if !ok {
			b.errorf(inst.pos, "counter %s: unknown counter type %s", name, unitTok)
		}
		b.info.Counters = append(b.info.Counters, &p4configv1.Counter{
			Preamble: preamble(id, name), Spec: &p4configv1.CounterSpec{Unit: unit}, Size: size})
	case "digest":
		id := b.objectID(prog, inst.pos, "digest", name, inst.anns, prefixDigest)
		if len(inst.typ.args) != 1 {
			b.errorf(inst.pos, "digest %s: expected one type argument", name)
			return
		}
		b.addDigest(prog, inst.pos, name, id, inst.typ.args[0].name)
	}
}

func (b *built) addDigestCall(prog *program, d digestCall, claim func(kind, name, pos string)) {
	decl, ok := prog.types[d.typ]
	if !ok || decl.isHeader {
		b.errorf(d.pos, "digest<%s>: not a struct type", d.typ)
		return
	}
	name := decl.name
	if a, ok := decl.anns.get("name"); ok && len(a.args) == 1 {
		if s, err := strconv.Unquote(a.args[0].text); err == nil {
			name = strings.TrimPrefix(s, ".")
		}
	}
	for _, dg := range b.info.Digests { // p4c lists each digest type once
		if dg.Preamble.Name == name {
			return
		}
	}
	claim("digest", name, d.pos)
	b.addDigest(prog, d.pos, name, hashedID(prefixDigest, name), d.typ)
}

// addDigest adds a digest and its struct to type_info; the struct is named as
// P4Runtime sees it (its @name, if any).
func (b *built) addDigest(prog *program, pos, name string, id uint32, typeName string) {
	decl, ok := prog.types[typeName]
	if !ok || decl.isHeader {
		b.errorf(pos, "digest %s: %s is not a struct type", name, typeName)
		return
	}
	structName := decl.name
	if a, ok := decl.anns.get("name"); ok && len(a.args) == 1 {
		if s, err := strconv.Unquote(a.args[0].text); err == nil {
			structName = strings.TrimPrefix(s, ".")
		}
	}
	spec := &p4configv1.P4StructTypeSpec{}
	for _, f := range decl.fields {
		w, err := prog.width(f.typ)
		if err != nil {
			b.errorf(f.pos, "digest %s member %s: %v", name, f.name, err)
		}
		spec.Members = append(spec.Members, &p4configv1.P4StructTypeSpec_Member{Name: f.name, TypeSpec: bitstring(w)})
	}
	if b.info.TypeInfo == nil {
		b.info.TypeInfo = &p4configv1.P4TypeInfo{Structs: map[string]*p4configv1.P4StructTypeSpec{}}
	}
	b.info.TypeInfo.Structs[structName] = spec
	b.info.Digests = append(b.info.Digests, &p4configv1.Digest{
		Preamble: preamble(id, name),
		TypeSpec: &p4configv1.P4DataTypeSpec{TypeSpec: &p4configv1.P4DataTypeSpec_Struct{
			Struct: &p4configv1.P4NamedType{Name: structName}}},
	})
}

func (b *built) addControllerHeaders(prog *program, claim func(kind, name, pos string)) {
	var decls []*typeDecl
	for _, d := range prog.types {
		if _, ok := d.anns.get("controller_header"); ok && d.isHeader {
			decls = append(decls, d)
		}
	}
	sort.Slice(decls, func(i, j int) bool { return decls[i].name < decls[j].name })
	for _, d := range decls {
		a, _ := d.anns.get("controller_header")
		name, err := strconv.Unquote(tokensText(a.args))
		if err != nil {
			b.errorf(d.pos, "header %s: @controller_header needs a string", d.name)
			continue
		}
		claim("controller header", name, d.pos)
		pre := preamble(b.objectID(prog, d.pos, "controller header", name, d.anns, prefixControllerHeader), name)
		for _, ann := range d.anns {
			if ann.name != "name" && ann.name != "id" {
				pre.Annotations = append(pre.Annotations, annotationText(ann))
			}
		}
		cpm := &p4configv1.ControllerPacketMetadata{Preamble: pre}
		for i, f := range d.fields {
			w, err := prog.width(f.typ)
			if err != nil {
				b.errorf(f.pos, "controller header %s field %s: %v", name, f.name, err)
			}
			cpm.Metadata = append(cpm.Metadata, &p4configv1.ControllerPacketMetadata_Metadata{
				Id: uint32(i + 1), Name: f.name, Bitwidth: int32(w)})
		}
		b.info.ControllerPacketMetadata = append(b.info.ControllerPacketMetadata, cpm)
	}
}

func (b *built) checkIDs() {
	b.errs = append(b.errs, idProblems(b.info)...)
}

// idProblems reports duplicate IDs and IDs whose prefix byte does not match
// the kind of object.
func idProblems(info *p4configv1.P4Info) []string {
	var out []string
	owner := map[uint32]string{}
	check := func(kind string, prefix uint32, pre *p4configv1.Preamble) {
		if pre == nil {
			out = append(out, fmt.Sprintf("%s without a preamble", kind))
			return
		}
		if pre.Id>>24 != prefix {
			out = append(out, fmt.Sprintf("%s %s: ID 0x%08x should start with 0x%02x", kind, pre.Name, pre.Id, prefix))
		}
		if prev, dup := owner[pre.Id]; dup {
			out = append(out, fmt.Sprintf("%s %s: ID 0x%08x is also used by %s", kind, pre.Name, pre.Id, prev))
		}
		owner[pre.Id] = kind + " " + pre.Name
	}
	for _, t := range info.GetTables() {
		check("table", prefixTable, t.GetPreamble())
	}
	for _, a := range info.GetActions() {
		check("action", prefixAction, a.GetPreamble())
	}
	for _, r := range info.GetRegisters() {
		check("register", prefixRegister, r.GetPreamble())
	}
	for _, c := range info.GetCounters() {
		check("counter", prefixCounter, c.GetPreamble())
	}
	for _, d := range info.GetDigests() {
		check("digest", prefixDigest, d.GetPreamble())
	}
	for _, c := range info.GetControllerPacketMetadata() {
		check("controller header", prefixControllerHeader, c.GetPreamble())
	}
	return out
}
