package p4

// Declaration-level reading on top of the tokenizer in p4src_test.go: the top
// level (typedefs, constants, headers and structs) and nothing inside controls.

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
		default:
			// Controls, parsers, functions, externs, the package: not read.
			if t.kind != tIdent {
				return fmt.Errorf("%s: unexpected %q at top level", t.pos, t.text)
			}
			if err := p.skipDeclarationWithBody(); err != nil {
				return err
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
