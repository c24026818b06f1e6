package copilot

import (
	"strings"

	"github.com/agentjournal/agentjournal/internal/textclip"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/agent"
)

// Copilot CLI 1.0.102 keeps the agent's todo list in a SQLite table of the
// session, todos (id, title, description, status pending | in_progress |
// done | blocked), written with its sql tool, and says only that the table
// changed (session.todos_changed, without the rows). The parser follows
// the table from the statements that succeeded: INSERT (with OR REPLACE,
// OR IGNORE or ON CONFLICT DO NOTHING), UPDATE and DELETE with a WHERE
// clause of comparisons of columns to literals (=, !=, <>, IN, NOT IN)
// joined by AND and OR, or none. Statements on other tables, and reads,
// change nothing. Any other statement that touches todos leaves the table
// unknown: from then on the parser reports no plan from it rather than a
// wrong one.

// maxSQLBytes bounds a sql tool query the parser reads; a longer one that
// touches todos leaves the table unknown.
const maxSQLBytes = 64 << 10

// todoColumns are the columns of the todos table, in table order.
var todoColumns = []string{"id", "title", "description", "status"}

type todoTable struct {
	rows    []map[string]string
	unknown bool
}

// touchesTodos reports a query that names the todos table.
func touchesTodos(query string) bool {
	return strings.Contains(strings.ToLower(query), "todos")
}

// apply follows the statements of one successful sql tool query. It
// reports whether the table may have changed.
func (t *todoTable) apply(query string) bool {
	if t.unknown {
		return false
	}
	if len(query) > maxSQLBytes {
		t.unknown = true
		return false
	}
	changed := false
	for _, stmt := range splitStatements(sqlTokens(query)) {
		if !namesTodos(stmt) {
			continue
		}
		ok, c := t.statement(stmt)
		if !ok {
			t.unknown = true
			return false
		}
		changed = changed || c
	}
	return changed
}

// plan is the table as plan items, in insertion order.
func (t *todoTable) plan() []eventstore.PlanItem {
	items := make([]eventstore.PlanItem, 0, len(t.rows))
	for _, r := range t.rows {
		if it, ok := agent.NewPlanItem(r["id"], r["title"], agent.TodoStatus(r["status"])); ok {
			items = append(items, it)
		}
	}
	return items
}

func namesTodos(stmt []sqlToken) bool {
	for _, tk := range stmt {
		if tk.kind == tokIdent && strings.EqualFold(tk.text, "todos") {
			return true
		}
	}
	return false
}

// statement applies one statement that names todos. ok is false for a
// statement the parser cannot follow.
func (t *todoTable) statement(stmt []sqlToken) (ok, changed bool) {
	// A RETURNING clause only reads.
	for i, tk := range stmt {
		if i > 0 && tk.kind == tokIdent && strings.EqualFold(tk.text, "returning") {
			stmt = stmt[:i]
			break
		}
	}
	c := &sqlCursor{toks: stmt}
	switch {
	case c.keyword("select"), c.keyword("explain"), c.keyword("pragma"):
		return true, false
	case c.keyword("insert"), c.keyword("replace"):
		return t.insert(c, strings.EqualFold(stmt[0].text, "replace"))
	case c.keyword("update"):
		return t.update(c)
	case c.keyword("delete"):
		return t.delete(c)
	}
	return false, false
}

func (t *todoTable) insert(c *sqlCursor, replace bool) (bool, bool) {
	ignore := false
	if c.keyword("or") {
		switch {
		case c.keyword("replace"):
			replace = true
		case c.keyword("ignore"):
			ignore = true
		case c.keyword("abort"), c.keyword("fail"), c.keyword("rollback"):
		default:
			return false, false
		}
	}
	if !c.keyword("into") || !c.table() {
		return false, false
	}
	cols := todoColumns
	if c.punct("(") {
		cols = nil
		for {
			name, ok := c.ident()
			if !ok {
				return false, false
			}
			cols = append(cols, strings.ToLower(name))
			if c.punct(")") {
				break
			}
			if !c.punct(",") {
				return false, false
			}
		}
	}
	if !c.keyword("values") {
		return false, false
	}
	var rows []map[string]string
	for {
		if !c.punct("(") {
			return false, false
		}
		row := map[string]string{"status": "pending"}
		for i := 0; ; i++ {
			v, ok := c.value()
			if !ok {
				return false, false
			}
			if i < len(cols) && v.literal {
				row[cols[i]] = v.text
			}
			if c.punct(")") {
				break
			}
			if !c.punct(",") {
				return false, false
			}
		}
		rows = append(rows, row)
		if !c.punct(",") {
			break
		}
	}
	if c.keyword("on") {
		if !c.keyword("conflict") {
			return false, false
		}
		c.skipParens()
		if !c.keyword("do") || !c.keyword("nothing") {
			return false, false
		}
		ignore = true
	}
	if !c.done() {
		return false, false
	}
	for _, r := range rows {
		i := t.find(r["id"])
		switch {
		case i >= 0 && ignore:
		case i >= 0 && replace:
			t.rows = append(t.rows[:i], t.rows[i+1:]...)
			t.add(r)
		default:
			t.add(r)
		}
	}
	return true, len(rows) > 0
}

func (t *todoTable) add(r map[string]string) {
	if len(t.rows) >= agent.MaxPlanItems {
		return
	}
	for k, v := range r {
		r[k] = textclip.Fit(v, agent.MaxLabelBytes)
	}
	t.rows = append(t.rows, r)
}

func (t *todoTable) find(id string) int {
	if id == "" {
		return -1
	}
	for i, r := range t.rows {
		if r["id"] == id {
			return i
		}
	}
	return -1
}

func (t *todoTable) update(c *sqlCursor) (bool, bool) {
	if c.keyword("or") {
		c.next()
	}
	if !c.table() || !c.keyword("set") {
		return false, false
	}
	set := map[string]string{}
	for {
		name, ok := c.ident()
		if !ok || !c.punct("=") {
			return false, false
		}
		name = strings.ToLower(name)
		v, ok := c.value()
		if !ok {
			return false, false
		}
		switch {
		case v.literal:
			set[name] = v.text
		case name == "id" || name == "title" || name == "status":
			// A computed value of a column the plan shows cannot be
			// followed.
			return false, false
		}
		if !c.punct(",") {
			break
		}
	}
	match, ok := c.where()
	if !ok {
		return false, false
	}
	changed := false
	for _, r := range t.rows {
		if match(r) {
			for k, v := range set {
				r[k] = textclip.Fit(v, agent.MaxLabelBytes)
			}
			changed = true
		}
	}
	return true, changed
}

func (t *todoTable) delete(c *sqlCursor) (bool, bool) {
	if !c.keyword("from") || !c.table() {
		return false, false
	}
	match, ok := c.where()
	if !ok {
		return false, false
	}
	kept := t.rows[:0]
	for _, r := range t.rows {
		if !match(r) {
			kept = append(kept, r)
		}
	}
	changed := len(kept) != len(t.rows)
	t.rows = kept
	return true, changed
}

// The tokens of a SQL statement.

type tokKind int

const (
	tokIdent  tokKind = iota // a keyword or a name, unquoted or quoted
	tokString                // a string literal
	tokNumber
	tokPunct
)

type sqlToken struct {
	kind tokKind
	text string
}

// sqlTokens splits SQL into tokens, dropping comments and white space.
func sqlTokens(q string) []sqlToken {
	var out []sqlToken
	for i := 0; i < len(q); {
		ch := q[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r':
			i++
		case strings.HasPrefix(q[i:], "--"):
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				return out
			}
			i += j + 1
		case strings.HasPrefix(q[i:], "/*"):
			j := strings.Index(q[i+2:], "*/")
			if j < 0 {
				return out
			}
			i += j + 4
		case ch == '\'' || ch == '"' || ch == '`' || ch == '[':
			end := ch
			if ch == '[' {
				end = ']'
			}
			var b strings.Builder
			j := i + 1
			for j < len(q) {
				if q[j] == end {
					if end != ']' && j+1 < len(q) && q[j+1] == end {
						b.WriteByte(end)
						j += 2
						continue
					}
					break
				}
				b.WriteByte(q[j])
				j++
			}
			kind := tokIdent
			if ch == '\'' {
				kind = tokString
			}
			out = append(out, sqlToken{kind: kind, text: b.String()})
			i = j + 1
		case ch >= '0' && ch <= '9' || ch == '.' && i+1 < len(q) && q[i+1] >= '0' && q[i+1] <= '9':
			j := i
			for j < len(q) && (q[j] >= '0' && q[j] <= '9' || q[j] == '.' || q[j] == 'e' || q[j] == 'E') {
				j++
			}
			out = append(out, sqlToken{kind: tokNumber, text: q[i:j]})
			i = j
		case ch == '_' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= 0x80:
			j := i
			for j < len(q) && (q[j] == '_' || q[j] == '$' || q[j] >= 'a' && q[j] <= 'z' || q[j] >= 'A' && q[j] <= 'Z' || q[j] >= '0' && q[j] <= '9' || q[j] >= 0x80) {
				j++
			}
			out = append(out, sqlToken{kind: tokIdent, text: q[i:j]})
			i = j
		case strings.HasPrefix(q[i:], "!=") || strings.HasPrefix(q[i:], "<>") || strings.HasPrefix(q[i:], "==") ||
			strings.HasPrefix(q[i:], "<=") || strings.HasPrefix(q[i:], ">="):
			out = append(out, sqlToken{kind: tokPunct, text: q[i : i+2]})
			i += 2
		default:
			out = append(out, sqlToken{kind: tokPunct, text: q[i : i+1]})
			i++
		}
	}
	return out
}

func splitStatements(toks []sqlToken) [][]sqlToken {
	var out [][]sqlToken
	start := 0
	for i, tk := range toks {
		if tk.kind == tokPunct && tk.text == ";" {
			if i > start {
				out = append(out, toks[start:i])
			}
			start = i + 1
		}
	}
	if start < len(toks) {
		out = append(out, toks[start:])
	}
	return out
}

// sqlCursor reads a statement's tokens.
type sqlCursor struct {
	toks []sqlToken
	i    int
}

func (c *sqlCursor) peek() (sqlToken, bool) {
	if c.i >= len(c.toks) {
		return sqlToken{}, false
	}
	return c.toks[c.i], true
}

func (c *sqlCursor) next() (sqlToken, bool) {
	tk, ok := c.peek()
	if ok {
		c.i++
	}
	return tk, ok
}

func (c *sqlCursor) done() bool { return c.i >= len(c.toks) }

func (c *sqlCursor) keyword(kw string) bool {
	tk, ok := c.peek()
	if ok && tk.kind == tokIdent && strings.EqualFold(tk.text, kw) {
		c.i++
		return true
	}
	return false
}

func (c *sqlCursor) punct(p string) bool {
	tk, ok := c.peek()
	if ok && tk.kind == tokPunct && tk.text == p {
		c.i++
		return true
	}
	return false
}

func (c *sqlCursor) ident() (string, bool) {
	tk, ok := c.peek()
	if !ok || tk.kind != tokIdent {
		return "", false
	}
	c.i++
	return tk.text, true
}

// table reads the table name, todos, possibly qualified (main.todos).
func (c *sqlCursor) table() bool {
	name, ok := c.ident()
	if ok && c.punct(".") {
		name, ok = c.ident()
	}
	return ok && strings.EqualFold(name, "todos")
}

// skipParens skips a parenthesized list, if one comes next.
func (c *sqlCursor) skipParens() {
	if !c.punct("(") {
		return
	}
	for depth := 1; depth > 0; {
		tk, ok := c.next()
		if !ok {
			return
		}
		if tk.kind == tokPunct && tk.text == "(" {
			depth++
		}
		if tk.kind == tokPunct && tk.text == ")" {
			depth--
		}
	}
}

// sqlValue is a value expression: a literal, or something computed (a
// function call, a column) whose value the parser does not know.
type sqlValue struct {
	text    string
	literal bool
}

// value reads one value expression, up to a comma, a closing parenthesis
// or a keyword that ends it, at depth 0.
func (c *sqlCursor) value() (sqlValue, bool) {
	start := c.i
	for depth := 0; ; {
		tk, ok := c.peek()
		if !ok {
			break
		}
		if depth == 0 && (tk.kind == tokPunct && (tk.text == "," || tk.text == ")") || tk.kind == tokIdent && endsValue(tk.text)) {
			break
		}
		if tk.kind == tokPunct && tk.text == "(" {
			depth++
		}
		if tk.kind == tokPunct && tk.text == ")" {
			depth--
		}
		c.i++
	}
	toks := c.toks[start:c.i]
	switch {
	case len(toks) == 0:
		return sqlValue{}, false
	case len(toks) == 1 && (toks[0].kind == tokString || toks[0].kind == tokNumber):
		return sqlValue{text: toks[0].text, literal: true}, true
	case len(toks) == 1 && toks[0].kind == tokIdent && strings.EqualFold(toks[0].text, "null"):
		return sqlValue{literal: true}, true
	}
	return sqlValue{}, true
}

// endsValue reports a keyword that ends a value expression.
func endsValue(word string) bool {
	for _, kw := range []string{"where", "on", "and", "or"} {
		if strings.EqualFold(word, kw) {
			return true
		}
	}
	return false
}

// where reads an optional WHERE clause into a row predicate; without one
// every row matches.
func (c *sqlCursor) where() (func(map[string]string) bool, bool) {
	if c.done() {
		return func(map[string]string) bool { return true }, true
	}
	if !c.keyword("where") {
		return nil, false
	}
	match, ok := c.or()
	return match, ok && c.done()
}

func (c *sqlCursor) or() (func(map[string]string) bool, bool) {
	left, ok := c.and()
	for ok && c.keyword("or") {
		var right func(map[string]string) bool
		if right, ok = c.and(); ok {
			l := left
			left = func(r map[string]string) bool { return l(r) || right(r) }
		}
	}
	return left, ok
}

func (c *sqlCursor) and() (func(map[string]string) bool, bool) {
	left, ok := c.term()
	for ok && c.keyword("and") {
		var right func(map[string]string) bool
		if right, ok = c.term(); ok {
			l := left
			left = func(r map[string]string) bool { return l(r) && right(r) }
		}
	}
	return left, ok
}

// term reads a parenthesized condition or one comparison of a todos column
// to literals.
func (c *sqlCursor) term() (func(map[string]string) bool, bool) {
	if c.punct("(") {
		m, ok := c.or()
		return m, ok && c.punct(")")
	}
	col, ok := c.ident()
	if !ok {
		return nil, false
	}
	col = strings.ToLower(col)
	if !isTodoColumn(col) {
		return nil, false
	}
	negate := c.keyword("not")
	if c.keyword("in") {
		if !c.punct("(") {
			return nil, false
		}
		set := map[string]bool{}
		for {
			v, ok := c.value()
			if !ok || !v.literal {
				return nil, false
			}
			set[v.text] = true
			if c.punct(")") {
				break
			}
			if !c.punct(",") {
				return nil, false
			}
		}
		return func(r map[string]string) bool { return set[r[col]] != negate }, true
	}
	if negate {
		return nil, false
	}
	switch {
	case c.punct("="), c.punct("=="):
	case c.punct("!="), c.punct("<>"):
		negate = true
	default:
		return nil, false
	}
	v, ok := c.value()
	if !ok || !v.literal {
		return nil, false
	}
	return func(r map[string]string) bool { return (r[col] == v.text) != negate }, true
}

func isTodoColumn(col string) bool {
	for _, c := range todoColumns {
		if c == col {
			return true
		}
	}
	return false
}
