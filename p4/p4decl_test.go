package p4

// Declaration-level parsing on top of the tokenizer in p4src_test.go: the
// top level, control bodies and table properties.

import (
	"fmt"
)

func (p *parser) topLevel() error {
	for !p.eof() {
		anns, err := p.annotations()
		if err != nil {
			return err
		}
		t := p.peek()
		switch t.text {
		case "typedef":
			p.next()
			typ, err := p.typeRef()
			if err != nil {
				return err
			}
			name, err := p.ident()
			if err != nil {
				return err
			}
			p.prog.typedefs[name.text] = typ
			if err := p.expect(";"); err != nil {
				return err
			}
		case "const":
			p.next()
			if _, err := p.typeRef(); err != nil {
				return err
			}
			name, err := p.ident()
			if err != nil {
				return err
			}
			if err := p.expect("="); err != nil {
				return err
			}
			from := p.i
			if err := p.skipStatement(); err != nil {
				return err
			}
			p.prog.consts[name.text] = p.toks[from : p.i-1]
		case "header", "struct":
			p.next()
			decl, err := p.typeDecl(t.text == "header", anns)
			if err != nil {
				return err
			}
			if _, dup := p.prog.types[decl.name]; dup {
				return fmt.Errorf("%s: type %s declared twice", decl.pos, decl.name)
			}
			p.prog.types[decl.name] = decl
		case "control":
			p.next()
			if err := p.control(); err != nil {
				return err
			}
		case "parser":
			p.next()
			if err := p.skipDeclarationWithBody(); err != nil {
				return err
			}
		case "enum", "error", "match_kind", "header_union", "extern":
			p.next()
			if err := p.skipDeclarationWithBody(); err != nil {
				return err
			}
		default:
			// A package instantiation: V1Switch(...) main; Pipeline(...) pipe; Switch(pipe) main;
			if t.kind != tIdent {
				return fmt.Errorf("%s: unexpected %q at top level", t.pos, t.text)
			}
			from := p.i
			if err := p.skipStatement(); err != nil {
				return err
			}
			stmt := p.toks[from:p.i]
			for k := 0; k+2 < len(stmt); k++ {
				if stmt[k].kind == tIdent && stmt[k+1].text == "(" && stmt[k+2].text == ")" {
					p.prog.roots = append(p.prog.roots, stmt[k].text)
				}
			}
		}
	}
	return nil
}

// skipDeclarationWithBody skips a declaration up to its closing brace (and a
// following ';'), or up to ';' when it has no body.
func (p *parser) skipDeclarationWithBody() error {
	start := p.peek()
	for !p.eof() {
		switch p.peek().text {
		case ";":
			p.next()
			return nil
		case "(":
			if _, err := p.balanced("(", ")"); err != nil {
				return err
			}
		case "{":
			if _, err := p.balanced("{", "}"); err != nil {
				return err
			}
			if p.is(";") {
				p.next()
			}
			return nil
		default:
			p.next()
		}
	}
	return fmt.Errorf("%s: declaration never ends", start.pos)
}

func (p *parser) typeDecl(isHeader bool, anns annotations) (*typeDecl, error) {
	name, err := p.ident()
	if err != nil {
		return nil, err
	}
	decl := &typeDecl{name: name.text, isHeader: isHeader, anns: anns, pos: name.pos}
	body, err := p.balanced("{", "}")
	if err != nil {
		return nil, err
	}
	sub := &parser{toks: body, prog: p.prog}
	for !sub.eof() {
		fanns, err := sub.annotations()
		if err != nil {
			return nil, err
		}
		pos := sub.peek().pos
		typ, err := sub.typeRef()
		if err != nil {
			return nil, err
		}
		fname, err := sub.ident()
		if err != nil {
			return nil, err
		}
		if err := sub.expect(";"); err != nil {
			return nil, err
		}
		decl.fields = append(decl.fields, field{name: fname.text, typ: typ, anns: fanns, pos: pos})
	}
	return decl, nil
}

func (p *parser) control() error {
	name, err := p.ident()
	if err != nil {
		return err
	}
	ctl := &controlDecl{name: name.text, pos: name.pos, applied: map[string]bool{}}
	if ctl.params, err = p.params(); err != nil {
		return err
	}
	if p.is(";") { // a control type declaration
		p.next()
		return nil
	}
	body, err := p.balanced("{", "}")
	if err != nil {
		return err
	}
	if _, dup := p.prog.controls[ctl.name]; dup {
		return fmt.Errorf("%s: control %s declared twice", ctl.pos, ctl.name)
	}
	p.prog.controls[ctl.name] = ctl
	p.prog.order = append(p.prog.order, ctl)
	sub := &parser{toks: body, prog: p.prog}
	return sub.controlBody(ctl)
}

func (p *parser) controlBody(ctl *controlDecl) error {
	for !p.eof() {
		anns, err := p.annotations()
		if err != nil {
			return err
		}
		t := p.peek()
		switch {
		case t.text == "action":
			p.next()
			name, err := p.ident()
			if err != nil {
				return err
			}
			a := &actionDecl{local: name.text, anns: anns, pos: name.pos, ctl: ctl}
			if a.params, err = p.params(); err != nil {
				return err
			}
			body, err := p.balanced("{", "}")
			if err != nil {
				return err
			}
			ctl.digests = append(ctl.digests, findDigestCalls(body, ctl)...)
			ctl.actions = append(ctl.actions, a)
		case t.text == "table":
			p.next()
			tbl, err := p.table(anns, ctl)
			if err != nil {
				return err
			}
			ctl.tables = append(ctl.tables, tbl)
		case t.text == "apply":
			p.next()
			body, err := p.balanced("{", "}")
			if err != nil {
				return err
			}
			ctl.digests = append(ctl.digests, findDigestCalls(body, ctl)...)
			for k := 0; k+3 < len(body); k++ {
				if body[k].kind == tIdent && body[k+1].text == "." && body[k+2].text == "apply" && body[k+3].text == "(" {
					ctl.applied[body[k].text] = true
				}
			}
		case t.text == "const":
			if err := p.skipStatement(); err != nil {
				return err
			}
		case t.kind == tIdent:
			// An extern or control instance, or a local variable.
			pos := t.pos
			typ, err := p.typeRef()
			if err != nil {
				return err
			}
			if !p.is("(") {
				if err := p.skipStatement(); err != nil { // a variable
					return err
				}
				continue
			}
			argToks, err := p.balanced("(", ")")
			if err != nil {
				return err
			}
			name, err := p.ident()
			if err != nil {
				return err
			}
			if p.is("=") { // RegisterAction<...>(reg) name = { ... };
				p.next()
				if _, err := p.balanced("{", "}"); err != nil {
					return err
				}
			}
			if err := p.expect(";"); err != nil {
				return err
			}
			ctl.instances = append(ctl.instances, &instanceDecl{
				typ: typ, args: splitArgs(argToks), name: name.text, anns: anns, pos: pos})
		default:
			return fmt.Errorf("%s: unexpected %q in control %s", t.pos, t.text, ctl.name)
		}
	}
	return nil
}

// splitArgs splits constructor arguments at top-level commas.
func splitArgs(toks []token) [][]token {
	var out [][]token
	depth, from := 0, 0
	for k, t := range toks {
		switch t.text {
		case "(", "{", "[", "<":
			depth++
		case ")", "}", "]", ">":
			depth--
		case ",":
			if depth == 0 {
				out = append(out, toks[from:k])
				from = k + 1
			}
		}
	}
	if from < len(toks) {
		out = append(out, toks[from:])
	}
	return out
}

// findDigestCalls finds v1model digest<T>(receiver, data) calls.
func findDigestCalls(body []token, ctl *controlDecl) []digestCall {
	var out []digestCall
	for k := 0; k+4 < len(body); k++ {
		if body[k].text == "digest" && body[k+1].text == "<" && body[k+2].kind == tIdent &&
			body[k+3].text == ">" && body[k+4].text == "(" {
			out = append(out, digestCall{typ: body[k+2].text, pos: body[k].pos, ctl: ctl})
		}
	}
	return out
}

func (p *parser) table(anns annotations, ctl *controlDecl) (*tableDecl, error) {
	name, err := p.ident()
	if err != nil {
		return nil, err
	}
	tbl := &tableDecl{local: name.text, anns: anns, pos: name.pos, ctl: ctl}
	body, err := p.balanced("{", "}")
	if err != nil {
		return nil, err
	}
	sub := &parser{toks: body, prog: p.prog}
	for !sub.eof() {
		isConst := false
		if sub.is("const") {
			sub.next()
			isConst = true
		}
		prop, err := sub.ident()
		if err != nil {
			return nil, err
		}
		if err := sub.expect("="); err != nil {
			return nil, err
		}
		switch prop.text {
		case "key":
			block, err := sub.balanced("{", "}")
			if err != nil {
				return nil, err
			}
			if tbl.keys, err = parseKeys(block, p.prog); err != nil {
				return nil, err
			}
		case "actions":
			block, err := sub.balanced("{", "}")
			if err != nil {
				return nil, err
			}
			if tbl.actions, err = parseActionRefs(block, p.prog); err != nil {
				return nil, err
			}
		case "default_action":
			act, err := sub.ident()
			if err != nil {
				return nil, err
			}
			tbl.defaultAction = act.text
			tbl.constDefault = isConst
			if err := sub.skipStatement(); err != nil {
				return nil, err
			}
		case "size":
			from := sub.i
			if err := sub.skipStatement(); err != nil {
				return nil, err
			}
			tbl.size = sub.toks[from : sub.i-1]
		default:
			if sub.is("{") {
				if _, err := sub.balanced("{", "}"); err != nil {
					return nil, err
				}
				if sub.is(";") {
					sub.next()
				}
			} else if err := sub.skipStatement(); err != nil {
				return nil, err
			}
		}
	}
	return tbl, nil
}

func parseKeys(block []token, prog *program) ([]keyDecl, error) {
	sub := &parser{toks: block, prog: prog}
	var keys []keyDecl
	for !sub.eof() {
		k := keyDecl{pos: sub.peek().pos}
		depth := 0
		for !sub.eof() && !(depth == 0 && sub.is(":")) {
			t := sub.next()
			switch t.text {
			case "[", "(":
				depth++
			case "]", ")":
				depth--
			}
			k.expr = append(k.expr, t)
		}
		if err := sub.expect(":"); err != nil {
			return nil, err
		}
		match, err := sub.ident()
		if err != nil {
			return nil, err
		}
		k.match = match.text
		if k.anns, err = sub.annotations(); err != nil {
			return nil, err
		}
		if err := sub.expect(";"); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, nil
}

func parseActionRefs(block []token, prog *program) ([]actionRefDecl, error) {
	sub := &parser{toks: block, prog: prog}
	var refs []actionRefDecl
	for !sub.eof() {
		anns, err := sub.annotations()
		if err != nil {
			return nil, err
		}
		name, err := sub.ident()
		if err != nil {
			return nil, err
		}
		if sub.is("(") {
			if _, err := sub.balanced("(", ")"); err != nil {
				return nil, err
			}
		}
		if err := sub.expect(";"); err != nil {
			return nil, err
		}
		refs = append(refs, actionRefDecl{local: name.text, anns: anns, pos: name.pos})
	}
	return refs, nil
}
