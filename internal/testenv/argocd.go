package testenv

import (
	"fmt"

	lua "github.com/yuin/gopher-lua"
)

// ArgoHealth runs an Argo CD health script the way Argo CD does: the object, decoded from its
// JSON form into Lua tables, is the global obj, and the script returns a table with status and
// message. Only the libraries Argo CD opens are available.
func ArgoHealth(script []byte, obj map[string]any) (string, string, error) {
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	L.SetGlobal("obj", luaValue(L, obj))
	if err := L.DoString(string(script)); err != nil {
		return "", "", err
	}
	hs, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		return "", "", fmt.Errorf("the script returned %s, not a table", L.Get(-1).Type())
	}
	return hs.RawGetString("status").String(), hs.RawGetString("message").String(), nil
}

// luaValue converts a JSON-shaped Go value: objects become tables with string keys, arrays
// tables indexed from 1, numbers LNumber.
func luaValue(L *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		t := L.NewTable()
		for k, x := range v {
			t.RawSetString(k, luaValue(L, x))
		}
		return t
	case []any:
		t := L.NewTable()
		for _, x := range v {
			t.Append(luaValue(L, x))
		}
		return t
	case string:
		return lua.LString(v)
	case bool:
		return lua.LBool(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case nil:
		return lua.LNil
	}
	panic(fmt.Sprintf("a %T in an object", v))
}
