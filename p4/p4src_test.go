package p4

// A small parser for the declarations of a P4_16 program that P4Runtime sees:
// typedefs, constants, headers and structs, controls with their actions,
// tables and extern instances, digest() calls and the package instantiation.
// It is written for this repository's style of P4 (one declaration per
// statement, absolute @name annotations) and skips everything else: parser
// states, action bodies, apply blocks (except for digest calls and table
// applications). Errors name the file and line.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

type tokKind int

const (
	tIdent tokKind = iota
	tNumber
	tString
	tPunct
)

type token struct {
	kind tokKind
	text string
	pos  string // file:line
}

// preprocess reads a P4 file and everything it includes with "quotes" (each
// file once, as the include guards do), records #define NAME VALUE, drops
// <system> includes and other directives, and returns the tokens.
type preprocessor struct {
	root    string // positions are relative to it
	defines map[string]string
	seen    map[string]bool
	tokens  []token
	files   []string
}

func preprocess(path string) (*preprocessor, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	// Programs live in p4/<arch>/; positions read p4-relative, e.g. include/control/sessions.p4:30.
	pp := &preprocessor{root: filepath.Dir(filepath.Dir(abs)), defines: map[string]string{}, seen: map[string]bool{}}
	if err := pp.file(abs); err != nil {
		return nil, err
	}
	return pp, nil
}

func (pp *preprocessor) file(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	if pp.seen[abs] {
		return nil
	}
	pp.seen[abs] = true
	pp.files = append(pp.files, abs)
	data, err := os.ReadFile(abs)
	if err != nil {
		return err
	}
	text := stripComments(string(data))
	rel, err := filepath.Rel(pp.root, abs)
	if err != nil {
		rel = abs
	}
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if !strings.HasPrefix(trimmed, "#") {
			if err := pp.tokenize(line, rel, i+1); err != nil {
				return err
			}
			continue
		}
		directive := strings.TrimSpace(strings.TrimPrefix(trimmed, "#"))
		fields := strings.Fields(directive)
		if len(fields) == 0 {
			continue
		}
		switch fields[0] {
		case "include":
			arg := strings.TrimSpace(strings.TrimPrefix(directive, "include"))
			if strings.HasPrefix(arg, "<") {
				continue // architecture headers: not part of this program's API
			}
			name := strings.Trim(arg, `"`)
			if err := pp.file(filepath.Join(filepath.Dir(abs), name)); err != nil {
				return fmt.Errorf("%s:%d: #include %q: %w", rel, i+1, name, err)
			}
		case "define":
			// The first definition wins, as with #ifndef NAME / #define NAME.
			if len(fields) >= 3 && pp.defines[fields[1]] == "" {
				pp.defines[fields[1]] = strings.Join(fields[2:], " ")
			}
		}
	}
	return nil
}

// stripComments removes // and /* */ comments, keeping line breaks and strings.
func stripComments(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			b.WriteString(s[i:min(j+1, len(s))])
			i = j
		case strings.HasPrefix(s[i:], "//"):
			for i < len(s) && s[i] != '\n' {
				i++
			}
			if i < len(s) {
				b.WriteByte('\n')
			}
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				end = len(s) - i - 2
			}
			b.WriteString(strings.Repeat("\n", strings.Count(s[i:i+2+end], "\n")))
			i += end + 3
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

func (pp *preprocessor) tokenize(s, file string, line int) error {
	pos := fmt.Sprintf("%s:%d", file, line)
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case isIdentStart(c):
			j := i
			for j < len(s) && (isIdentStart(s[j]) || isDigit(s[j])) {
				j++
			}
			pp.tokens = append(pp.tokens, token{tIdent, s[i:j], pos})
			i = j
		case isDigit(c):
			j := i
			for j < len(s) && (isIdentStart(s[j]) || isDigit(s[j])) {
				j++
			}
			pp.tokens = append(pp.tokens, token{tNumber, s[i:j], pos})
			i = j
		case c == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) {
				return fmt.Errorf("%s: unterminated string", pos)
			}
			pp.tokens = append(pp.tokens, token{tString, s[i : j+1], pos})
			i = j + 1
		default:
			pp.tokens = append(pp.tokens, token{tPunct, string(c), pos})
			i++
		}
	}
	return nil
}

func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool      { return c >= '0' && c <= '9' }

// ---------------------------------------------------------------------------
// Declarations
// ---------------------------------------------------------------------------

type annotation struct {
	name string
	args []token
}

type annotations []annotation

func (as annotations) get(name string) (annotation, bool) {
	for _, a := range as {
		if a.name == name {
			return a, true
		}
	}
	return annotation{}, false
}

// typeRef is a P4 type as written: bit<W>, int<W>, bool, or a name with
// optional type arguments (register<bit<32>, user_idx_t>).
type typeRef struct {
	name  string
	width []token // bit<...> / int<...>
	args  []typeRef
}

type field struct {
	name string
	typ  typeRef
	anns annotations
	pos  string
}

type typeDecl struct {
	name     string
	isHeader bool
	fields   []field
	anns     annotations
	pos      string
}

type param struct {
	dir  string
	typ  typeRef
	name string
	pos  string
}

type actionDecl struct {
	local  string
	anns   annotations
	params []param
	pos    string
	ctl    *controlDecl
}

type keyDecl struct {
	expr  []token
	match string
	anns  annotations
	pos   string
}

type actionRefDecl struct {
	local string
	anns  annotations
	pos   string
}

type tableDecl struct {
	local         string
	anns          annotations
	keys          []keyDecl
	actions       []actionRefDecl
	defaultAction string
	constDefault  bool
	size          []token
	pos           string
	ctl           *controlDecl
}

type instanceDecl struct {
	typ  typeRef
	args [][]token
	name string
	anns annotations
	pos  string
}

type digestCall struct {
	typ string
	pos string
	ctl *controlDecl
}

type controlDecl struct {
	name      string
	params    []param
	actions   []*actionDecl
	tables    []*tableDecl
	instances []*instanceDecl
	applied   map[string]bool // tables applied in the apply block
	digests   []digestCall
	pos       string
}

type program struct {
	path     string
	defines  map[string]string
	typedefs map[string]typeRef
	consts   map[string][]token
	types    map[string]*typeDecl
	controls map[string]*controlDecl
	order    []*controlDecl
	roots    []string // controls and parsers named in the package instantiation
}

type parser struct {
	toks []token
	i    int
	prog *program
}

func parseProgram(path string) (*program, error) {
	pp, err := preprocess(path)
	if err != nil {
		return nil, err
	}
	prog := &program{
		path: path, defines: pp.defines, typedefs: map[string]typeRef{},
		consts: map[string][]token{}, types: map[string]*typeDecl{},
		controls: map[string]*controlDecl{},
	}
	p := &parser{toks: pp.tokens, prog: prog}
	if err := p.topLevel(); err != nil {
		return nil, err
	}
	return prog, nil
}

func (p *parser) eof() bool        { return p.i >= len(p.toks) }
func (p *parser) peek() token      { return p.peekN(0) }
func (p *parser) next() token      { t := p.peek(); p.i++; return t }
func (p *parser) is(s string) bool { return !p.eof() && p.peek().text == s }

func (p *parser) peekN(n int) token {
	if p.i+n >= len(p.toks) {
		return token{tPunct, "", "EOF"}
	}
	return p.toks[p.i+n]
}

func (p *parser) expect(s string) error {
	t := p.next()
	if t.text != s {
		return fmt.Errorf("%s: expected %q, found %q", t.pos, s, t.text)
	}
	return nil
}

func (p *parser) ident() (token, error) {
	t := p.next()
	if t.kind != tIdent {
		return t, fmt.Errorf("%s: expected a name, found %q", t.pos, t.text)
	}
	return t, nil
}

// balanced returns the tokens between an opening bracket (the current token)
// and its match, and moves past the match.
func (p *parser) balanced(open, close string) ([]token, error) {
	start := p.peek()
	if err := p.expect(open); err != nil {
		return nil, err
	}
	depth := 1
	from := p.i
	for !p.eof() {
		t := p.next()
		switch t.text {
		case open:
			depth++
		case close:
			depth--
			if depth == 0 {
				return p.toks[from : p.i-1], nil
			}
		}
	}
	return nil, fmt.Errorf("%s: %q is never closed", start.pos, open)
}

// skipStatement moves past the next ';' that is not inside brackets.
func (p *parser) skipStatement() error {
	start := p.peek()
	depth := 0
	for !p.eof() {
		t := p.next()
		switch t.text {
		case "(", "{", "[":
			depth++
		case ")", "}", "]":
			depth--
		case ";":
			if depth == 0 {
				return nil
			}
		}
	}
	return fmt.Errorf("%s: statement never ends", start.pos)
}

func (p *parser) annotations() (annotations, error) {
	var as annotations
	for p.is("@") {
		p.next()
		name, err := p.ident()
		if err != nil {
			return nil, err
		}
		a := annotation{name: name.text}
		if p.is("(") {
			if a.args, err = p.balanced("(", ")"); err != nil {
				return nil, err
			}
		}
		as = append(as, a)
	}
	return as, nil
}

func (p *parser) typeRef() (typeRef, error) {
	name, err := p.ident()
	if err != nil {
		return typeRef{}, err
	}
	t := typeRef{name: name.text}
	if !p.is("<") {
		return t, nil
	}
	if name.text == "bit" || name.text == "int" || name.text == "varbit" {
		t.width, err = p.balanced("<", ">")
		return t, err
	}
	p.next()
	for {
		if p.is("_") { // TNA's "don't care" type argument
			p.next()
			t.args = append(t.args, typeRef{name: "_"})
		} else {
			arg, err := p.typeRef()
			if err != nil {
				return t, err
			}
			t.args = append(t.args, arg)
		}
		sep := p.next()
		if sep.text == ">" {
			return t, nil
		}
		if sep.text != "," {
			return t, fmt.Errorf("%s: expected ',' or '>' in type arguments, found %q", sep.pos, sep.text)
		}
	}
}

func (p *parser) params() ([]param, error) {
	toks, err := p.balanced("(", ")")
	if err != nil {
		return nil, err
	}
	sub := &parser{toks: toks, prog: p.prog}
	var out []param
	for !sub.eof() {
		if _, err := sub.annotations(); err != nil {
			return nil, err
		}
		pr := param{pos: sub.peek().pos}
		if d := sub.peek().text; d == "in" || d == "out" || d == "inout" {
			pr.dir = d
			sub.next()
		}
		if pr.typ, err = sub.typeRef(); err != nil {
			return nil, err
		}
		name, err := sub.ident()
		if err != nil {
			return nil, err
		}
		pr.name = name.text
		out = append(out, pr)
		if !sub.eof() {
			if err := sub.expect(","); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}
