package p4

// A small reader of the declarations of a P4_16 program that the contract tests
// compare with docs/pipeline.md and the Go code: #defines, typedefs, constants,
// headers and structs (with the widths of their fields). It is written for this
// repository's style of P4 (one declaration per statement) and skips everything
// else: parsers, controls, functions, the package. What P4Runtime sees is the
// compilers' business: p4c's and bf-p4c's P4Info are checked in and compared
// (p4info_test.go). Errors name the file and line.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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

type program struct {
	path     string
	defines  map[string]string
	typedefs map[string]typeRef
	consts   map[string][]token
	types    map[string]*typeDecl
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
