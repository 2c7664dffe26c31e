#!/usr/bin/env python3
"""Writes the four bindings' glue for each primitive described in core/api/<name>.toml.

    python3 scripts/gen-bindings.py          write the generated files
    python3 scripts/gen-bindings.py --check  exit 1 naming every generated file that differs

A table names the primitive's core type, the client method that makes one, and its operations:
their arguments (kinds: count, wait), their answer (none, bool, count), whether they wait for
others (and so take each runtime's cancel). From it, for each primitive:

    bindings-c/src/gen/<name>.rs       the C functions (polylock_<name>_*; cbindgen writes the header)
    bindings-python/src/gen/<name>.rs  the PyO3 class Native<Class>, and its stub in _native.pyi
    bindings-node/src/gen/<name>.rs    the napi class Native<Class>
    bindings-java/src/gen/<name>.rs    the JNI entry points, and their declarations in Native.java
    bindings-*/src/gen/mod.rs          the list of generated modules

and from core/api/errors.toml, the one error table, the sections of the files that carry it:
core's ErrorKind, C's POLYLOCK_* result codes, Python's exception classes (and their class for
each kind), Node's error numbers, classes and types, Java's PolylockException.Code.

Each argument kind is parsed by the core (`Wait::from_millis`, `Wait::from_secs`,
`Wait::from_millis_f64`, `count_from_i64`, `count_from_f64`), in each runtime's documented
convention; each binding's helpers (its blocking call, its Promise, its NativeFuture, its asyncio
call) stay hand-written, as does each runtime's idiomatic class over the generated one.
"""

from __future__ import annotations

import argparse
import pathlib
import re
import subprocess
import sys
import textwrap
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
API = ROOT / "core" / "api"
COMMAND = "python3 scripts/gen-bindings.py"

ARG_KINDS = {
    "count", "wait", "term", "permits", "delta", "lease", "id", "owner", "change", "token", "commands",
}
ANSWERS = {
    "none", "bool", "count", "signed", "leadership", "leader?", "texts", "change", "permit",
    "permit?", "permits", "permits?", "held", "released", "holds", "lease_left", "duration",
    "replies", "token?",
}
LOCAL_ANSWERS = {"text", "term?", "bool", "permits", "token?", "reason?"}
WAITING_ANSWERS = {"bool", "leadership", "change", "permit", "permits", "held"}
RUNTIMES = ("c", "python", "node", "java")


def header(table: str, comment: str = "//") -> str:
    return (
        f"{comment} Generated from core/api/{table}.toml by `{COMMAND}`: do not edit; change the\n"
        f"{comment} table or the generator and run it again (CI fails on a difference).\n"
    )


def camel(snake: str, upper: bool = False) -> str:
    parts = snake.split("_")
    first = parts[0].capitalize() if upper else parts[0]
    return first + "".join(p.capitalize() for p in parts[1:])


def load(path: pathlib.Path) -> dict:
    with path.open("rb") as f:
        t = tomllib.load(f)
    where = path.relative_to(ROOT)
    for key in ("name", "class", "core", "doc", "op") + (() if t.get("handle") == "hand" else ("open",)):
        if key not in t:
            sys.exit(f"{where}: no '{key}'")
    for op in t["op"]:
        for a in op.get("args", []):
            if a["kind"] not in ARG_KINDS:
                sys.exit(f"{where}: {op['name']}: unknown argument kind '{a['kind']}'")
        if op["answer"] not in ANSWERS:
            sys.exit(f"{where}: {op['name']}: unknown answer '{op['answer']}'")
        if op.get("waits") and op["answer"] not in WAITING_ANSWERS:
            sys.exit(f"{where}: {op['name']}: a waiting operation answers one of {WAITING_ANSWERS}")
        if op.get("undo") and op["answer"] not in ("leadership", "permit", "permits", "held"):
            sys.exit(f"{where}: {op['name']}: undo is for a call that wins a leadership or permits")
    for loc in t.get("local", []):
        if loc["answer"] not in LOCAL_ANSWERS:
            sys.exit(f"{where}: {loc['name']}: unknown local answer '{loc['answer']}'")
    for item in t["op"] + t.get("local", []):
        if set(item.get("only", RUNTIMES)) - set(RUNTIMES):
            sys.exit(f"{where}: {item['name']}: 'only' names a runtime not of {RUNTIMES}")
        if op.get("false_is_timeout") and op["answer"] != "bool":
            sys.exit(f"{where}: {op['name']}: false_is_timeout needs a bool answer")
    t["table"] = path.stem
    return t


def doc_lines(text: str, indent: str, comment: str = "///") -> str:
    """A doc comment wrapped at 100 columns."""
    width = 100 - len(indent) - len(comment) - 1
    out, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            out.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    if line:
        out.append(line)
    return "".join(f"{indent}{comment} {l}\n" for l in out)


def uses_wait(t: dict) -> bool:
    return any(a["kind"] == "wait" for op in t["op"] for a in op.get("args", []))


def uses_kind(ops: list[dict], kind: str) -> bool:
    return any(a["kind"] == kind for op in ops for a in op.get("args", []))


def call_args(op: dict) -> str:
    """The operation's arguments as the core call takes them (an id and commands by reference)."""
    return ", ".join(
        ("&" if a["kind"] in ("id", "commands") else "") + a["name"] for a in op.get("args", [])
    )


def core_call(op: dict) -> str:
    """The core method an operation calls, with its arguments."""
    return f"{op.get('call', op['name'])}({op.get('call_with', call_args(op))})"


def article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def code_of(text: str) -> str:
    """Rust text without its comment lines (a doc's words are no use of a name)."""
    return "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("//"))


def for_runtime(t: dict, runtime: str) -> bool:
    """Whether `t` is generated for `runtime` (its `runtimes`, every one by default)."""
    return runtime in t.get("runtimes", RUNTIMES)


def ops_for(t: dict, runtime: str) -> list[dict]:
    if not for_runtime(t, runtime):
        return []
    return [op for op in t["op"] if runtime in op.get("only", RUNTIMES)]


def locals_for(t: dict, runtime: str) -> list[dict]:
    if not for_runtime(t, runtime):
        return []
    return [loc for loc in t.get("local", []) if runtime in loc.get("only", RUNTIMES)]


def hand(t: dict) -> bool:
    """Whether the handle (its struct, its constructors) is written by hand: only the calls are
    generated."""
    return t.get("handle") == "hand"


def local_call(loc: dict) -> str:
    """The core method a local calls, with its arguments."""
    return f"{loc.get('call', loc['name'])}({call_args(loc)})"


def open_args(t: dict) -> list[dict]:
    return t.get("open_args", [])


# ---- C ----------------------------------------------------------------------------------------

C_WAIT_DOC = "`wait_ms`: -1 forever, 0 one try, a positive number of ms. Blocks the calling thread."


C_ANSWER_DOCS = {
    "leadership": " `POLYLOCK_OK` with the term in `*out_term`, `POLYLOCK_TIMEOUT` when the wait ran"
    " out.",
    "change": " `POLYLOCK_OK` with the leader's term then in `*out_term` (0: nobody leads),"
    " `POLYLOCK_TIMEOUT` when the wait ran out.",
    "leader?": " `*out_has` false when there is none; otherwise its identity is copied into `buf` (at"
    " most `len` bytes, NUL-terminated when `len` > 0; the full length in `*out_len`, as snprintf"
    " counts) and its term into `*out_term`. `buf`, `out_len` and `out_term` may be NULL.",
    "replies": " The replies go to `*out` as one array reply (a `polylock_reply` tree: read it with"
    " `polylock_reply_type`, `_integer`, `_string`, `_count`, `_item`; free it with"
    " `polylock_reply_free`); `out` may be NULL when they are not wanted. The commands are"
    " `ncommands` commands, the i-th of `argcs[i]` arguments, all the arguments one after the other"
    " in `argv` with their lengths in `argvlens` (hiredis's argv/argvlen; `argvlens` may be NULL"
    " for NUL-terminated arguments).",
    "token?": " The token goes to `*out`; 0 when there is none.",
    "texts": " Each is followed by a NUL byte; the list is copied into `buf` only when all of it fits"
    " in `len` bytes (else `buf` is left as it was: call again with `*out_len` bytes); `*out_len`"
    " gets the bytes the whole list takes and `*out_count` their number. `buf`, `out_len` and"
    " `out_count` may be NULL.",
}


def c_file(t: dict) -> str:
    name, handle = t["name"], f"polylock_{t['name']}"
    ops, locs = ops_for(t, "c"), locals_for(t, "c")
    answers = {op["answer"] for op in ops}
    core_uses = [t["core"]] + (["Wait"] if uses_wait(t) else [])
    timeout = any(op.get("false_is_timeout") for op in ops)
    result_uses = ["boundary", "on", "polylock_result", "POLYLOCK_OK"] + (
        ["POLYLOCK_TIMEOUT"] if timeout else []
    )
    result_uses += ["text"] if open_args(t) or uses_kind(ops, "id") else []
    result_uses += (
        ["null", "set_last_error", "POLYLOCK_INVALID_ARGUMENT", "POLYLOCK_PERMIT_ID_LEN"]
        if "permit" in answers
        else []
    )
    result_uses += ["null", "put"] if locs else []
    local_answers = {loc["answer"] for loc in locs}
    result_uses += (
        ["set_last_error", "POLYLOCK_NOT_OWNER"] if "token?" in local_answers else []
    )
    result_uses += ["term_or_timeout"] if answers & {"leadership", "change"} else []
    result_uses += ["put_leader"] if "leader?" in answers else []
    result_uses += ["put_texts"] if "texts" in answers else []
    s = header(t["table"])
    s += doc_lines(f"`{handle}`: {t['doc']}", "", "//!")
    s += "\n"
    if not hand(t) or uses_kind(ops, "id") or uses_kind(ops, "commands"):
        s += "use std::ffi::c_char;\n\n"
    if hand(t):
        core_uses.remove(t["core"])
    if core_uses:
        s += f"use polylock::{{{', '.join(sorted(core_uses))}}};\n\n"
    if hand(t):
        # The calls alone: the helpers they use, read from their text.
        body = c_calls(t, ops, locs)
        result_uses = [u for u in dict.fromkeys(result_uses) if re.search(rf"\b{u}\b", code_of(body))]
        s += f"use crate::{name}::{handle};\n"
        s += f"use crate::result::{{{', '.join(result_uses)}}};\n\n"
        return s + body
    s += "use crate::client::{new_handle, polylock_client};\n"
    if "replies" in answers:
        s += "use crate::reply::{commands, polylock_reply, put_replies};\n"
    s += f"use crate::result::{{{', '.join(dict.fromkeys(result_uses))}}};\n\n"
    s += c_handle_part(t)
    s += c_calls(t, ops, locs)
    return s


def c_handle_part(t: dict) -> str:
    """The handle's struct, its `_new` and its `_free`."""
    name, handle = t["name"], f"polylock_{t['name']}"
    s = doc_lines(f"{t['doc']} Opaque and thread-safe; it keeps its client alive.", "")
    s += f"pub struct {handle} {{\n    inner: {t['core']},\n}}\n\n"
    s += doc_lines(
        t.get("new_doc", f"A {name} handle for `name` (a znode path on ZooKeeper).")
        + f" Free it with `{handle}_free`.",
        "",
    )
    free_doc = doc_lines(
        t.get("free_doc", f"Free {article(name)} {name} handle.") + " NULL is allowed.", ""
    )
    extra_params = "".join(f"    {a['name']}: *const c_char,\n" for a in open_args(t))
    parse_open = "".join(
        f"""    // SAFETY: caller contract.
    let {a['name']} = match unsafe {{ text({a['name']}, "{a['name']}") }} {{
        Ok(v) => v.to_string(),
        Err(r) => return r,
    }};
"""
        for a in open_args(t)
    )
    open_call = ", ".join(["n"] + [f"&{a['name']}" for a in open_args(t)])
    s += f"""#[no_mangle]
pub unsafe extern "C" fn {handle}_new(
    client: *mut polylock_client,
    name: *const c_char,
{extra_params}    out: *mut *mut {handle},
) -> polylock_result {{
{parse_open}    // SAFETY: forwarded contract.
    unsafe {{
        new_handle(client, name, out, |c, n| {{
            Ok({handle} {{
                inner: c.{t['open']}({open_call})?,
            }})
        }})
    }}
}}

{free_doc}#[no_mangle]
pub unsafe extern "C" fn {handle}_free({name}: *mut {handle}) {{
    let _ = boundary(|| {{
        if !{name}.is_null() {{
            // SAFETY: from {handle}_new, freed once (caller contract).
            drop(unsafe {{ Box::from_raw({name}) }});
        }}
        POLYLOCK_OK
    }});
}}
"""
    return s


def c_calls(t: dict, ops: list[dict], locs: list[dict]) -> str:
    """The C functions of the table's locals and operations."""
    name, handle = t["name"], f"polylock_{t['name']}"
    s = ""
    for loc in locs:
        out_ty = {"bool": "bool", "token?": "u64", "reason?": "u32"}[loc["answer"]]
        params = "".join(f"    {a['name']}: u64,\n" for a in loc.get("args", []))
        value = f"h.inner.{local_call(loc)}"
        if loc["answer"] == "token?":
            body = f"""match {value} {{
            // SAFETY: caller contract on `out`.
            Some(v) => unsafe {{ put(out, v) }},
            None if out.is_null() => null("out"),
            None => {{
                set_last_error("{loc['c_none']}");
                POLYLOCK_NOT_OWNER
            }}
        }}"""
            doc = loc.get("c_doc", loc["doc"] + " The token goes to `*out`; `POLYLOCK_NOT_OWNER` when there is none.")
        else:
            if loc["answer"] == "reason?":
                value += ".map_or(0, |r| r.number())"
            body = f"// SAFETY: caller contract on `out`.\n        unsafe {{ put(out, {value}) }}"
            doc = loc.get("c_doc", loc["doc"])
        s += "\n" + doc_lines(doc + " Local: no round trip.", "")
        s += f"""#[no_mangle]
pub unsafe extern "C" fn {handle}_{loc['name']}(
    {name}: *mut {handle},
{params}    out: *mut {out_ty},
) -> polylock_result {{
    boundary(|| {{
        // SAFETY: caller contract.
        let Some(h) = (unsafe {{ {name}.as_ref() }}) else {{
            return null("{name}");
        }};
        {body}
    }})
}}
"""
    for op in ops:
        params = [f"{name}: *mut {handle}"]
        parse, pre = [], ""
        for a in op.get("args", []):
            if a["kind"] in ("count", "term", "owner", "token"):
                params.append(f"{a['name']}: u64")
            elif a["kind"] == "commands":
                params += ["ncommands: usize", "argcs: *const usize", "argv: *const *const c_char",
                           "argvlens: *const usize"]
                pre += f"""    // SAFETY: caller contract on the arrays.
    let {a['name']} = match unsafe {{ commands(ncommands, argcs, argv, argvlens) }} {{
        Ok(v) => v,
        Err(r) => return r,
    }};
"""
            elif a["kind"] == "permits":
                params.append(f"{a['name']}: u32")
            elif a["kind"] == "delta":
                params.append(f"{a['name']}: i64")
            elif a["kind"] == "lease":
                params.append("lease_ms: i64")
                parse.append(
                    f"let {a['name']} = polylock::args::lease_millis(lease_ms, \"lease_ms\")?;"
                )
            elif a["kind"] == "id":
                params.append(f"{a['name']}: *const c_char")
                pre += f"""    // SAFETY: caller contract.
    let {a['name']} = match unsafe {{ text({a['name']}, "{a['name']}") }} {{
        Ok(v) => v.to_string(),
        Err(r) => return r,
    }};
"""
            else:
                params.append("wait_ms: i64")
                parse.append(f"let {a['name']} = Wait::from_millis(wait_ms, \"wait_ms\")?;")
        doc = op.get("c_doc", op["doc"])
        if any(a["kind"] == "wait" for a in op.get("args", [])):
            doc += " " + C_WAIT_DOC
        answer = op.get("c_answer", op["answer"])
        value = f"inner.{core_call(op)}.await"
        after = None
        if op.get("false_is_timeout"):
            doc += " `POLYLOCK_OK` when true, `POLYLOCK_TIMEOUT` when false."
            out_decl, out_arg = "let mut answer = false;", "&mut answer"
        elif answer == "none" and op["answer"] == "none":
            out_decl, out_arg = "let mut answer = ();", "&mut answer"
        elif answer in ("permits", "held", "released", "none"):
            # Nothing to answer but OK (C gives permits back by number, with
            # polylock_semaphore_release).
            out_decl, out_arg = "let mut answer = ();", "&mut answer"
            value = f"{value}.map(drop)"
        elif answer == "lease_left":
            params.append("out: *mut i64")
            doc += " It goes to `*out`."
            out_decl, out_arg = None, "out"
            value = f"Ok({value}?.as_millis_code())"
        elif answer in ("leadership", "change"):
            params.append("out_term: *mut u64")
            doc += C_ANSWER_DOCS[answer]
            out_decl, out_arg = "let mut term: Option<u64> = None;", "&mut term"
            pick = "l.term" if answer == "leadership" else "l.map_or(0, |l| l.term)"
            value = f"Ok({value}?.map(|l| {pick}))"
            after = "// SAFETY: forwarded contract on `out_term`.\n    unsafe { term_or_timeout(r, term, out_term) }"
        elif answer == "leader?":
            params += ["buf: *mut c_char", "len: usize", "out_len: *mut usize",
                       "out_term: *mut u64", "out_has: *mut bool"]
            doc += C_ANSWER_DOCS[answer]
            out_decl, out_arg = "let mut answer = None;", "&mut answer"
            after = ("// SAFETY: forwarded contract on the out-parameters.\n"
                     "    unsafe { put_leader(r, answer, buf, len, out_len, out_term, out_has) }")
        elif answer == "permit":
            params += ["id_out: *mut c_char", "id_len: usize"]
            pre = f"""    if id_out.is_null() {{
        return null("id_out");
    }}
    if id_len < POLYLOCK_PERMIT_ID_LEN {{
        set_last_error(&format!(
            "id_out needs room for {{POLYLOCK_PERMIT_ID_LEN}} bytes, got {{id_len}}"
        ));
        return POLYLOCK_INVALID_ARGUMENT;
    }}
""" + pre
            out_decl, out_arg = "let mut id = String::new();", "&mut id"
            value = f"Ok({value}?.id)"
            after = """if r == POLYLOCK_OK {
        // SAFETY: `id_out` has room for POLYLOCK_PERMIT_ID_LEN bytes (checked above).
        unsafe {
            std::ptr::copy_nonoverlapping(id.as_ptr(), id_out.cast::<u8>(), id.len());
            *id_out.add(id.len()) = 0;
        }
    }
    r"""
        elif answer == "replies":
            params.append("out: *mut *mut polylock_reply")
            doc += C_ANSWER_DOCS[answer]
            out_decl, out_arg = "let mut answer = Vec::new();", "&mut answer"
            after = ("// SAFETY: forwarded contract on `out`.\n"
                     "    unsafe { put_replies(r, answer, out) }")
        elif answer == "token?":
            params.append("out: *mut u64")
            doc += C_ANSWER_DOCS[answer]
            out_decl, out_arg = None, "out"
            value = f"Ok({value}?.unwrap_or(0))"
        elif answer == "texts":
            params += ["buf: *mut c_char", "len: usize", "out_len: *mut usize", "out_count: *mut usize"]
            doc += C_ANSWER_DOCS[answer]
            out_decl, out_arg = "let mut answer = Vec::new();", "&mut answer"
            after = ("// SAFETY: forwarded contract on the out-parameters.\n"
                     "    unsafe { put_texts(r, &answer, buf, len, out_len, out_count) }")
        else:
            out_ty = {"bool": "bool", "signed": "i64", "holds": "u32"}.get(answer, "u64")
            params.append(f"out: *mut {out_ty}")
            doc += " The answer goes to `*out`."
            out_decl, out_arg = None, "out"
        keep = op.get("false_is_timeout") or after
        body = pre
        if out_decl:
            body += f"    {out_decl}\n"
        body += "    // SAFETY: forwarded contract.\n"
        prefix = "let r = " if keep else ""
        body += f"    {prefix}unsafe {{\n"
        body += f"        on({name}, \"{name}\", {out_arg}, |h| {{\n"
        for p_ in parse:
            body += f"            {p_}\n"
        body += "            let inner = h.inner.clone();\n"
        body += f"            Ok(async move {{ {value} }})\n"
        body += "        })\n"
        body += "    }" + (";\n" if keep else "\n")
        if op.get("false_is_timeout"):
            body += "    match r {\n        POLYLOCK_OK if !answer => POLYLOCK_TIMEOUT,\n        r => r,\n    }\n"
        elif after:
            body += f"    {after}\n"
        s += "\n" + doc_lines(doc, "")
        s += "#[no_mangle]\n"
        s += f"pub unsafe extern \"C\" fn {handle}_{op.get('c_name', op['name'])}(\n"
        s += "".join(f"    {p_},\n" for p_ in params)
        s += ") -> polylock_result {\n" + body + "}\n"
    return s


# ---- Python -----------------------------------------------------------------------------------

PY_TYPES = {"count": ("u64", "int"), "wait": ("Option<f64>", "Optional[float]"),
            "owner": ("u64", "int"), "change": ("&str, seconds: Option<f64>", "str, seconds: Optional[float]"),
            "term": ("u64", "int"), "permits": ("u32", "int"), "delta": ("i64", "int"),
            "lease": ("Option<f64>", "Optional[float]"), "id": ("String", "str"),
            "token": ("i64", "int"), "commands": ("Vec<Vec<Vec<u8>>>", "list[list[bytes]]")}
PY_ANSWERS = {
    "none": ("()", "None"),
    "bool": ("bool", "bool"),
    "count": ("u64", "int"),
    "signed": ("i64", "int"),
    "permit": ("Option<String>", "Optional[str]"),
    "permit?": ("Option<String>", "Optional[str]"),
    "permits": ("bool", "bool"),
    "held": ("bool", "bool"),
    "released": ("()", "None"),
    "holds": ("u32", "int"),
    "lease_left": ("Option<f64>", "Optional[float]"),
    "duration": ("f64", "float"),
    "leadership": ("Option<u64>", "Optional[int]"),
    "leader?": ("Option<(String, u64)>", "Optional[tuple[str, int]]"),
    "texts": ("Vec<String>", "list[str]"),
    "change": ("(bool, Option<(String, u64)>)", "tuple[bool, Optional[tuple[str, int]]]"),
    "replies": ("crate::convert::Replies", "list[Any]"),
    "token?": ("Option<u64>", "Optional[int]"),
}
PY_LOCALS = {"text": ("String", "str"), "term?": ("Option<u64>", "Optional[int]"),
             "bool": ("bool", "bool"), "permits": ("u32", "int"),
             "token?": ("Option<u64>", "Optional[int]"),
             "reason?": ("Option<&'static str>", "Optional[str]")}
# How each answer goes from the core's value `v` to Python's.
PY_CONVERT = {
    "lease_left": "v.as_secs()",
    "duration": "v.as_secs_f64()",
    "leadership": "v.map(|l| l.term)",
    "leader?": "v.map(|l| (l.identity, l.term))",
    "change": "match v { Some(now) => (true, now.map(|l| (l.identity, l.term))), None => (false, None) }",
    "replies": "crate::convert::Replies(v)",
}


def python_async(op: dict) -> bool:
    return op.get("python_async", bool(op.get("waits")))


def python_file(t: dict) -> str:
    cls = f"Native{t['class']}"
    ops = ops_for(t, "python")
    waits = any(op.get("waits") for op in ops)
    asyncs = any(python_async(op) for op in ops)
    permits = any(op["answer"] in ("permit", "permits", "held") for op in ops)
    core_uses = ([] if hand(t) else [t["core"]]) + (["Wait"] if uses_wait(t) else []) + (
        ["ErrorKind"] if permits else []
    )
    s = header(t["table"])
    s += doc_lines(
        f"`{cls}`: {t['doc']} Blocking calls release the GIL and answer Ctrl-C; waiting calls have "
        "an async twin that reports to asyncio through a callback.",
        "",
        "//!",
    )
    s += "\n"
    s += f"use polylock::{{{', '.join(sorted(core_uses))}}};\n"
    s += "use pyo3::prelude::*;\n\n"
    call_uses = (["interruptible"] if waits else []) + (
        ["NativeCall", "Outcome", "Reply"] if asyncs else []
    )
    if call_uses:
        s += f"use crate::call::{{{', '.join(call_uses)}}};\n"
    s += "use crate::convert::blocking;\n"
    errors = (["err"] if uses_wait(t) or any(uses_kind(ops, k) for k in ("lease", "change", "token")) else []) + (
        ["to_py"] if waits else []
    )
    if errors:
        s += f"use crate::errors::{{{', '.join(errors)}}};\n"
    if hand(t):
        s += f"use crate::{t['name']}::{cls};\n"
    s += "\n"
    if not hand(t):
        s += doc_lines(t["doc"], "")
        s += f"""#[pyclass(frozen, module = "polylock._native")]
pub(crate) struct {cls} {{
    inner: {t['core']},
}}

impl {cls} {{
    pub(crate) fn new(inner: {t['core']}) -> {cls} {{
        {cls} {{ inner }}
    }}
}}

"""
    s += f"""#[pymethods]
impl {cls} {{
    #[getter]
    fn name(&self) -> String {{
        self.inner.name().to_string()
    }}
"""
    for loc in locals_for(t, "python"):
        ty = PY_LOCALS[loc["answer"]][0]
        value = f"self.inner.{local_call(loc)}" + {
            "text": ".to_string()", "reason?": ".map(|r| r.name())"
        }.get(loc["answer"], "")
        s += "\n" + doc_lines(loc["doc"] + " Local: no round trip.", "    ")
        if loc.get("args"):
            params = "".join(f", {a['name']}: {PY_TYPES[a['kind']][0]}" for a in loc["args"])
            s += f"    fn {loc['name']}(&self{params}) -> {ty} {{\n        {value}\n    }}\n"
        else:
            s += f"    #[getter]\n    fn {loc['name']}(&self) -> {ty} {{\n        {value}\n    }}\n"
    for op in ops:
        args = op.get("args", [])
        params = "".join(f", {a['name']}: {PY_TYPES[a['kind']][0]}" for a in args)
        parse = "".join(
            f"        let {a['name']} = Wait::from_secs({a['name']}, \"timeout\").map_err(err)?;\n"
            if a["kind"] == "wait"
            else f"        let {a['name']} = polylock::args::lease_secs({a['name']}, \"lease\").map_err(err)?;\n"
            if a["kind"] == "lease"
            else f"        let {a['name']} = polylock::args::token_from_i64({a['name']}, \"token\").map_err(err)?;\n"
            if a["kind"] == "token"
            else f"        let seconds = polylock::args::lease_secs(seconds, \"seconds\").map_err(err)?;\n"
            f"        let {a['name']} = polylock::args::lease_change({a['name']}, seconds, \"a number of seconds\")\n"
            "            .map_err(err)?;\n"
            for a in args
            if a["kind"] in ("wait", "lease", "change", "token")
        )
        answer = op["answer"]
        ret = PY_ANSWERS[answer][0]
        conv = PY_CONVERT.get(answer)
        call = f"inner.{core_call(op)}"
        s += "\n" + doc_lines(op["doc"], "    ")
        if op.get("waits"):
            sig = ", ".join(a["name"] for a in args)
            s += f"    #[pyo3(signature = ({sig}))]\n"
            s += f"    fn {op['name']}(&self, py: Python<'_>{params}) -> PyResult<{ret}> {{\n"
            s += parse
            s += "        let inner = self.inner.clone();\n"
            if op.get("python_never"):
                s += f"""        if wait == Wait::Never {{
            // One try, on the blocking path.
            return blocking(py, async move {{ inner.{op['python_never']}.await }})
                .map(|got| got.is_some());
        }}
"""
            if answer in ("permit", "permits", "held"):
                got = "Ok(p) => Ok(Some(p.id))" if answer == "permit" else "Ok(_) => Ok(true)"
                lost = "Ok(None)" if answer == "permit" else "Ok(false)"
                s += f"""        match interruptible(py, async move {{ {call}.await }})? {{
            {got},
            Err(e) if e.kind() == ErrorKind::Timeout => {lost},
            Err(e) => Err(to_py(py, e)),
        }}
    }}
"""
            else:
                s += f"        interruptible(py, async move {{ {call}.await }})?\n"
                if conv:
                    s += f"            .map(|v| {conv})\n"
                s += "            .map_err(|e| to_py(py, e))\n    }\n"
        else:
            s += f"    fn {op['name']}(&self, py: Python<'_>{params}) -> PyResult<{ret}> {{\n"
            s += parse
            s += "        let inner = self.inner.clone();\n"
            if conv:
                s += f"        let v = blocking(py, async move {{ {call}.await }})?;\n"
                s += f"        Ok({conv})\n    }}\n"
            elif answer == "released":
                s += f"        blocking(py, async move {{ {call}.await }}).map(|_| ())\n    }}\n"
            else:
                s += f"        blocking(py, async move {{ {call}.await }})\n    }}\n"
        if python_async(op):
            s += "\n" + doc_lines(
                "The same, started for asyncio: `done(ok, value)` when it ends"
                + (
                    f" (what it won is given back by `{op['undo']}` if the call was cancelled "
                    "meanwhile)."
                    if op.get("undo")
                    else "."
                ),
                "    ",
            )
            s += f"    fn {op['name']}_async(&self{params}, done: Py<PyAny>) -> PyResult<NativeCall> {{\n"
            s += parse
            s += "        let inner = self.inner.clone();\n"
            if answer == "permit":
                arms = f"""                    Ok(p) => {{
                        let id = p.id.clone();
                        Outcome::Taken(
                            Reply::Text(p.id),
                            Box::new(move || {{
                                Box::pin(async move {{
                                    let _ = inner.{op['undo']}(&id).await;
                                }})
                            }}),
                        )
                    }}
                    Err(e) if e.kind() == ErrorKind::Timeout => Outcome::Value(Reply::Bool(false)),
"""
            elif answer == "permits":
                arms = f"""                    Ok(p) => Outcome::Taken(
                        Reply::Bool(true),
                        Box::new(move || {{
                            Box::pin(async move {{
                                let _ = p.{op['undo']}(&inner).await;
                            }})
                        }}),
                    ),
                    Err(e) if e.kind() == ErrorKind::Timeout => Outcome::Value(Reply::Bool(false)),
"""
            elif answer == "held":
                arms = f"""                    Ok(_) => Outcome::Taken(
                        Reply::Bool(true),
                        Box::new(move || {{
                            Box::pin(async move {{
                                let _ = inner.{op['undo']}(owner).await;
                            }})
                        }}),
                    ),
                    Err(e) if e.kind() == ErrorKind::Timeout => Outcome::Value(Reply::Bool(false)),
"""
            elif answer in ("none", "released"):
                arms = "                    Ok(_) => Outcome::Value(Reply::Bool(true)),\n"
            elif op.get("undo"):
                arms = f"""                    Ok(Some(_)) => Outcome::Taken(
                        Reply::Bool(true),
                        Box::new(move || {{
                            Box::pin(async move {{
                                let _ = inner.{op['undo']}().await;
                            }})
                        }}),
                    ),
                    Ok(None) => Outcome::Value(Reply::Bool(false)),
"""
            elif answer == "bool":
                arms = "                    Ok(v) => Outcome::Value(Reply::Bool(v)),\n"
            else:
                sys.exit(f"{t['table']}: {op['name']}: no asyncio twin for a {answer} answer")
            s += f"""        Ok(NativeCall::start(
            async move {{
                match {call}.await {{
{arms}                    Err(e) => Outcome::Error(e),
                }}
            }},
            done,
        ))
    }}
"""
    s += "}\n"
    return s


def python_stub(t: dict) -> str:
    cls = f"Native{t['class']}"
    s = f"class {cls}:\n    @property\n    def name(self) -> str: ...\n"
    for loc in locals_for(t, "python"):
        ret = PY_LOCALS[loc["answer"]][1]
        if loc.get("args"):
            params = "".join(f", {a['name']}: {PY_TYPES[a['kind']][1]}" for a in loc["args"])
            s += f"    def {loc['name']}(self{params}) -> {ret}: ...\n"
        else:
            s += f"    @property\n    def {loc['name']}(self) -> {ret}: ...\n"
    for op in ops_for(t, "python"):
        args = op.get("args", [])
        params = "".join(f", {a['name']}: {PY_TYPES[a['kind']][1]}" for a in args)
        ret = PY_ANSWERS[op["answer"]][1]
        s += f"    def {op['name']}(self{params}) -> {ret}: ...\n"
        if python_async(op):
            s += (
                f"    def {op['name']}_async(self{params}, done: Callable[[bool, Any], Any])"
                " -> NativeCall: ...\n"
            )
    return s


# ---- Node -------------------------------------------------------------------------------------


def node_file(t: dict) -> str:
    cls = f"Native{t['class']}"
    ops = ops_for(t, "node")
    answers = {op["answer"] for op in ops}
    if hand(t):
        body = ""
    else:
        body = doc_lines(f"{t['doc']} The JS class over it is in `index.js`.", "")
        body += f"""#[napi]
pub struct {cls} {{
    inner: {t['core']},
}}

impl {cls} {{
    pub(crate) fn new(inner: {t['core']}) -> {cls} {{
        {cls} {{ inner }}
    }}
}}

"""
    body += f"""#[napi]
impl {cls} {{
    /// The name.
    #[napi(getter)]
    pub fn name(&self) -> Result<String> {{
        entry(|| Ok(self.inner.name().to_string()))
    }}
"""
    body += node_calls(t, ops)
    if "permits" in answers:
        body += NODE_PERMITS_SLOT.replace("NATIVE", cls)
    # The imports: what the text above uses.
    def used(names: list[str]) -> list[str]:
        return [n for n in names if re.search(rf"\b{re.escape(n)}\b", code_of(body))]

    core_uses = used(["count_from_f64", "ErrorKind", "Permits", "Wait"] + (
        [] if hand(t) else [t["core"]]
    ))
    outcome_uses = used(["answer", "done", "failed", "leader_outcome", "number", "outcome",
                         "outcome_text", "replies", "sync_err", "Outcome"])
    s = header(t["table"])
    s += doc_lines(
        f"`{cls}`: {t['doc']} Every call settles a Promise from polylock's runtime; waiting calls "
        "take a `CancelToken` (for `AbortSignal`).",
        "",
        "//!",
    )
    s += "\n"
    if "permits" in answers:
        s += "use std::sync::{Arc, Mutex};\n\n"
    s += "use napi::bindgen_prelude::*;\nuse napi_derive::napi;\n"
    if core_uses:
        s += f"use polylock::{{{', '.join(sorted(core_uses))}}};\n"
    s += "\nuse crate::boundary::entry;\n"
    cancel = used(["aborted", "CancelToken", "Ran"])
    if cancel:
        s += f"use crate::cancel::{{{', '.join(cancel)}}};\n"
    s += "use crate::driver::promise;\n"
    if hand(t):
        s += f"use crate::{t['name']}::{cls};\n"
    s += f"use crate::outcome::{{{', '.join(sorted(outcome_uses, key=str.lower))}}};\n\n"
    return s + body


def node_calls(t: dict, ops: list[dict]) -> str:
    """The napi methods of the table's locals and operations (the impl block's end included)."""
    s = ""
    for loc in locals_for(t, "node"):
        call = f"self.inner.{local_call(loc)}"
        ty, value = {
            "text": ("String", f"{call}.to_string()"),
            "term?": ("Option<f64>", f"{call}.map(|t| t as f64)"),
            "token?": ("Option<f64>", f"{call}.map(|t| t as f64)"),
            "reason?": ("Option<String>", f"{call}.map(|r| r.name().to_string())"),
            "bool": ("bool", call),
        }[loc["answer"]]
        s += "\n" + doc_lines(loc["doc"] + " Local: no round trip.", "    ")
        if loc.get("args"):
            # Owners: a JS number (index.js makes them).
            params = "".join(f", {a['name']}: f64" for a in loc["args"])
            parse = "".join(f"let {a['name']} = {a['name']} as u64; " for a in loc["args"])
            s += f"    #[napi]\n    pub fn {loc['name']}(&self{params}) -> Result<{ty}> {{\n"
            s += f"        entry(|| {{ {parse}Ok({value}) }})\n    }}\n"
        else:
            s += f"    #[napi(getter)]\n    pub fn {loc['name']}(&self) -> Result<{ty}> {{\n"
            s += f"        entry(|| Ok({value}))\n    }}\n"
    for op in ops:
        args = op.get("args", [])
        params, parse = "", ""
        for a in args:
            if a["kind"] in ("count", "term"):
                params += f", {a['name']}: f64"
                parse += (
                    f"            let {a['name']} = count_from_f64({a['name']}, \"{camel(a['name'])}\")"
                    ".map_err(sync_err)?;\n"
                )
            elif a["kind"] == "permits":
                params += f", {a['name']}: f64"
                parse += (
                    f"            let {a['name']} = polylock::args::permits_from_f64({a['name']}, "
                    f"\"{camel(a['name'])}\").map_err(sync_err)?;\n"
                )
            elif a["kind"] == "delta":
                params += f", {a['name']}: i64"
            elif a["kind"] == "token":
                params += f", {a['name']}: f64"
                parse += (
                    f"            let {a['name']} = polylock::args::token_from_f64({a['name']}, \"{a['name']}\")"
                    ".map_err(sync_err)?;\n"
                )
            elif a["kind"] == "commands":
                # Buffers stay on the JS thread: their bytes are copied before the call.
                params += f", {a['name']}: Vec<Vec<Buffer>>"
                parse += (
                    f"            let {a['name']}: Vec<Vec<Vec<u8>>> = {a['name']}\n"
                    "                .iter()\n"
                    "                .map(|c| c.iter().map(|a| a.to_vec()).collect())\n"
                    "                .collect();\n"
                )
            elif a["kind"] == "owner":
                params += f", {a['name']}: f64"
                parse += f"            let {a['name']} = {a['name']} as u64;\n"
            elif a["kind"] == "change":
                params += f", {a['name']}: String, amount_ms: Option<f64>"
                parse += (
                    "            let amount = polylock::args::lease_millis_f64(amount_ms, \"ms\")"
                    ".map_err(sync_err)?;\n"
                    f"            let {a['name']} = polylock::args::lease_change(&{a['name']}, amount, \"ms\")"
                    ".map_err(sync_err)?;\n"
                )
            elif a["kind"] == "id":
                params += f", {a['name']}: String"
            elif a["kind"] == "lease":
                params += ", lease_ms: Option<f64>"
                parse += (
                    f"            let {a['name']} = polylock::args::lease_millis_f64(lease_ms, "
                    "\"leaseMs\").map_err(sync_err)?;\n"
                )
            else:
                params += ", wait_ms: Option<f64>"
                parse += (
                    f"            let {a['name']} = Wait::from_millis_f64(wait_ms, \"waitMs\")"
                    ".map_err(sync_err)?;\n"
                )
        call = f"inner.{core_call(op)}"
        answer = op["answer"]
        s += "\n" + doc_lines(op["doc"], "    ")
        s += "    #[napi]\n"
        if op.get("waits"):
            slot = "        slot: Option<&PermitsSlot>,\n" if answer == "permits" else ""
            s += f"    pub fn {op['name']}<'e>(\n        &self,\n        env: &'e Env{params},\n        token: Option<&CancelToken>,\n{slot}    ) -> Result<Object<'e>> {{\n"
            s += "        entry(|| {\n" + parse
            s += "            let (inner, token) = (self.inner.clone(), CancelToken::state_of(token));\n"
            if slot:
                s += "            let slot = slot.map(|slot| slot.inner.clone());\n"
            if answer == "held":
                aborted_arms = (
                    "                    Ran::Aborted => aborted(),\n"
                    "                    Ran::AbortedAfter(_) => {\n"
                    "                        // Aborted as it arrived: give it back.\n"
                    f"                        let _ = inner.{op['undo']}(owner).await;\n"
                    "                        aborted()\n"
                    "                    }\n"
                )
            elif answer == "permits":
                aborted_arms = (
                    "                    Ran::Aborted => aborted(),\n"
                    "                    Ran::AbortedAfter(p) => {\n"
                    f"                        let _ = p.{op['undo']}(&inner).await;\n"
                    "                        aborted()\n"
                    "                    }\n"
                )
            elif answer == "permit":
                aborted_arms = (
                    "                    Ran::Aborted => aborted(),\n"
                    "                    Ran::AbortedAfter(p) => {\n"
                    f"                        let _ = inner.{op['undo']}(&p.id).await;\n"
                    "                        aborted()\n"
                    "                    }\n"
                )
            elif op.get("undo"):
                aborted_arms = (
                    "                    Ran::AbortedAfter(Some(_)) => {\n"
                    f"                        let _ = inner.{op['undo']}().await;\n"
                    "                        aborted()\n"
                    "                    }\n"
                    "                    Ran::Aborted | Ran::AbortedAfter(None) => aborted(),\n"
                )
            else:
                aborted_arms = "                    Ran::Aborted | Ran::AbortedAfter(_) => aborted(),\n"
            done_arms = {
                "bool": "                    Ran::Done(Ok(v)) => outcome(v, None),\n",
                "held": "                    Ran::Done(Ok(_)) => outcome(true, None),\n"
                "                    Ran::Done(Err(e)) if e.kind() == ErrorKind::Timeout => "
                "outcome(false, None),\n",
                "permits": "                    Ran::Done(Ok(p)) => {\n"
                "                        if let Some(slot) = slot {\n"
                "                            *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(p);\n"
                "                        }\n"
                "                        outcome(true, None)\n"
                "                    }\n"
                "                    Ran::Done(Err(e)) if e.kind() == ErrorKind::Timeout => "
                "outcome(false, None),\n",
                "permit": "                    Ran::Done(Ok(p)) => outcome_text(p.id),\n"
                "                    Ran::Done(Err(e)) if e.kind() == ErrorKind::Timeout => "
                "outcome(false, None),\n",
                "leadership": "                    Ran::Done(Ok(Some(l))) => outcome(true, Some(l.term as f64)),\n"
                "                    Ran::Done(Ok(None)) => outcome(false, None),\n",
                "change": "                    Ran::Done(Ok(Some(now))) => Outcome {\n"
                "                        value: true,\n"
                "                        ..leader_outcome(now)\n"
                "                    },\n"
                "                    Ran::Done(Ok(None)) => outcome(false, None),\n",
            }[answer]
            matched = f"""match token.run({call}).await {{
{aborted_arms}{done_arms}                    Ran::Done(Err(e)) => failed(&e),
                }}"""
            if op.get("node_bare"):
                matched = f"answer({matched})"
            s += f"""            promise(env, async move {{
                {matched}
            }})
        }})
    }}
"""
        else:
            s += f"    pub fn {op['name']}<'e>(&self, env: &'e Env{params}) -> Result<Object<'e>> {{\n"
            s += "        entry(|| {\n" + parse
            s += "            let inner = self.inner.clone();\n"
            if answer == "none":
                settle = f"done({call}.await)"
            elif answer in ("count", "signed"):
                settle = f"number({call}.await.map(|n| n as f64))"
            elif answer == "leader?":
                settle = f"match {call}.await {{ Ok(l) => leader_outcome(l), Err(e) => failed(&e) }}"
            elif answer == "texts":
                settle = (
                    f"match {call}.await {{ Ok(v) => Outcome {{ text: Some(v.join(\"\\0\")), "
                    "..outcome(true, None) }, Err(e) => failed(&e) }"
                )
            elif answer == "released":
                settle = (
                    f"match {call}.await {{ Ok(r) => outcome(r == polylock::Released::Freed, None), "
                    "Err(e) => failed(&e) }"
                )
            elif answer == "lease_left":
                settle = (
                    f"match {call}.await {{ Ok(left) => outcome(left.is_held(), "
                    "Some(left.as_millis_code() as f64)), Err(e) => failed(&e) }"
                )
            elif answer == "duration":
                settle = (
                    f"match {call}.await {{ Ok(d) => outcome(true, Some(d.as_millis() as f64)), "
                    "Err(e) => failed(&e) }"
                )
            elif answer == "replies":
                settle = f"replies({call}.await)"
            elif answer == "token?":
                settle = (
                    f"match {call}.await {{ Ok(t) => outcome(t.is_some(), t.map(|t| t as f64)), "
                    "Err(e) => failed(&e) }"
                )
            else:
                settle = f"match {call}.await {{ Ok(v) => outcome(v, None), Err(e) => failed(&e) }}"
            if op.get("node_bare"):
                settle = f"answer({settle})"
            s += f"            promise(env, async move {{ {settle} }})\n        }})\n    }}\n"
    s += "}\n"
    return s


# The permits of one acquire, for an operation that answers `permits`.
NODE_PERMITS_SLOT = """
/// The permits of one acquire (filled by `NATIVE::acquire`), given back exactly: on ZooKeeper and
/// etcd the leases that acquire took, not any of this client's.
#[napi]
pub struct PermitsSlot {
    inner: Arc<Mutex<Option<Permits>>>,
}

#[napi]
impl PermitsSlot {
    /// An empty slot.
    #[napi(constructor)]
    pub fn new() -> Result<Self> {
        entry(|| {
            Ok(PermitsSlot {
                inner: Arc::default(),
            })
        })
    }

    /// Give the permits back to `semaphore` (once: `NOT_OWNER` after that, or before any were
    /// put here).
    #[napi]
    pub fn release<'e>(&self, env: &'e Env, semaphore: &NATIVE) -> Result<Object<'e>> {
        entry(|| {
            let taken = self.inner.lock().unwrap_or_else(|e| e.into_inner()).take();
            let s = semaphore.inner.clone();
            promise(env, async move {
                match taken {
                    Some(p) => done(p.release(&s).await),
                    None => failed(&polylock::Error::new(
                        ErrorKind::NotOwner,
                        format!(
                            "these permits of semaphore '{}' were given back already",
                            s.name()
                        ),
                    )),
                }
            })
        })
    }

    /// True once a lease of these permits was lost (ZooKeeper, etcd; never on Redis).
    #[napi(getter)]
    pub fn is_lost(&self) -> Result<bool> {
        entry(|| {
            Ok(self
                .inner
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
                .is_some_and(|p| p.is_lost()))
        })
    }
}
"""


# ---- Java -------------------------------------------------------------------------------------

J_ANSWERS = {"none": ("()", "()", "void"), "bool": ("jboolean", "JNI_FALSE", "boolean"),
             "holds": ("jint", "0", "int"), "released": ("jint", "0", "int"),
             "lease_left": ("jlong", "-2", "long"),
             "count": ("jlong", "0", "long"), "signed": ("jlong", "0", "long"),
             "permit?": ("jstring", "std::ptr::null_mut()", "String"),
             "permits?": ("jlong", "0", "long"),
             "leader?": ("jobjectArray", "std::ptr::null_mut()", "String[]"),
             "texts": ("jobjectArray", "std::ptr::null_mut()", "String[]"),
             "replies": ("jobjectArray", "std::ptr::null_mut()", "Object[]"),
             "token?": ("jlong", "0", "long")}


# The Java spelling of each argument kind: (its JNI type, its type in Native.java).
J_ARGS = {"count": ("jlong", "long"), "term": ("jlong", "long"), "permits": ("jlong", "long"),
          "owner": ("jlong", "long"),
          "delta": ("jlong", "long"), "lease": ("jlong", "long"), "wait": ("jlong", "long"),
          "id": ("JString<'l>", "String"), "token": ("jlong", "long"),
          "commands": ("JObjectArray<'l>", "byte[][][]")}


def java_arg(a: dict) -> str:
    """An argument's name on the Rust side of a JNI entry point."""
    return {"wait": "wait_ms", "lease": "lease_ms", "owner": "owner_id"}.get(a["kind"], a["name"])


def java_file(t: dict) -> str:
    name, core, jname = t["name"], t["core"], camel(t["name"])
    ops, locs = ops_for(t, "java"), locals_for(t, "java")
    leases = any(op["answer"] in ("permits", "permits?") for op in ops)
    body = f"""
{doc_lines(f"The {name.replace('_', ' ')} behind a handle from `{jname}New` (NativeHandle keeps it alive during the call).", "")}pub(crate) fn handle<'a>(handle: jlong) -> Result<&'a {core}> {{
    borrow(handle, "{t.get('closed', f'this {name} handle')}")
}}
"""
    if not hand(t):
        body += java_handle_part(t)
    if leases:
        body += JAVA_LEASES.replace("CORE", core)
    body += java_locals(t, locs)
    body += java_ops(t, ops)

    def used(names: list[str]) -> list[str]:
        return [n for n in names if re.search(rf"\b{re.escape(n)}\b", code_of(body))]

    objects = used(["JClass", "JObject", "JObjectArray", "JString"])
    sys_uses = used(["jboolean", "jint", "jlong", "jobjectArray", "jstring", "JNI_FALSE"])
    core_uses = used([core, "Permits", "Released", "Wait", "count_from_i64"])
    convert_uses = used(["block", "byte_commands", "java_string", "jbool", "owner", "reply_array", "string",
                         "string_array"])
    s = header(t["table"])
    s += doc_lines(
        f"The JNI entry points of `Native.{jname}*`: {t['doc']} {article(name).capitalize()} "
        f"{name.replace('_', ' ')} is a native handle (a `Box<{core}>` from `{jname}New`, freed once "
        f"by `{jname}Free`); a waiting call completes a `NativeFuture`.",
        "",
        "//!",
    )
    s += "\n"
    s += f"use jni::objects::{{{', '.join(sorted(objects))}}};\n"
    s += f"use jni::sys::{{{', '.join(sorted(sys_uses, key=str.lower))}}};\n"
    s += "use jni::JNIEnv;\n"
    s += f"use polylock::{{{', '.join(sorted(core_uses, key=lambda u: (u[0].islower(), u)))}}};\n\n"
    if "client(" in body:
        s += "use crate::client::client;\n"
    s += f"use crate::convert::{{{', '.join(sorted(convert_uses))}}};\n"
    s += "use crate::error::{entry, Result};\n"
    s += f"use crate::handle::{{{', '.join(used(['borrow', 'free', 'into_handle']))}}};\n"
    wait_uses = used(["start", "Won"])
    if wait_uses:
        s += f"use crate::wait::{{{', '.join(wait_uses)}}};\n"
    return s + body


def java_handle_part(t: dict) -> str:
    """`<name>New` and `<name>Free`."""
    name, core, jname = t["name"], t["core"], camel(t["name"])
    extra_params = "".join(f"    {a['name']}: JString<'l>,\n" for a in open_args(t))
    parse_open = "".join(
        f"        let {a['name']} = string(env, &{a['name']}, \"{a.get('what', a['name'])}\")?;\n"
        for a in open_args(t)
    )
    open_call = ", ".join(["&name"] + [f"&{a['name']}" for a in open_args(t)])
    return f"""
/// {article(name).capitalize()} {name.replace('_', ' ')} for `name` on the client `client`; its handle.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_{jname}New<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    client_handle: jlong,
    name: JString<'l>,
{extra_params}) -> jlong {{
    entry(&mut env, 0, |env| {{
        let c = client(client_handle)?;
        let name = string(env, &name, "{name.replace('_', ' ')} name")?;
{parse_open}        Ok(into_handle(c.{t['open']}({open_call})?))
    }})
}}

/// Free {article(name)} {name.replace('_', ' ')}'s handle (0 is allowed).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_{jname}Free<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    {name}: jlong,
) {{
    entry(&mut env, (), |_| {{
        free::<{core}>({name});
        Ok(())
    }})
}}
"""


# The Java form of each local answer: (JNI type, default, Native.java type, the value from the
# core's `v`, what the doc adds).
J_LOCALS = {
    "term?": ("jlong", "-1", "long", "v.map_or(-1, |v| v.min(i64::MAX as u64) as jlong)", " -1 for none."),
    "token?": ("jlong", "-1", "long", "v.map_or(-1, |v| v.min(i64::MAX as u64) as jlong)", " -1 for none."),
    "permits": ("jlong", "0", "long", "jlong::from(v)", ""),
    "bool": ("jboolean", "JNI_FALSE", "boolean", "jbool(v)", ""),
    "text": ("jstring", "std::ptr::null_mut()", "String", "java_string(env, &v)", ""),
}


def java_locals(t: dict, locs: list[dict]) -> str:
    name, jname = t["name"], camel(t["name"])
    s = ""
    for loc in locs:
        if loc["answer"] not in J_LOCALS:
            sys.exit(f"{t['table']}: {loc['name']}: Java has no local {loc['answer']} (yet)")
        ty, default, _, value, more = J_LOCALS[loc["answer"]]
        java_name = f"{jname}{camel(loc['name'], True)}"
        params = "".join(f"    {java_arg(a)}: {J_ARGS[a['kind']][0]},\n" for a in loc.get("args", []))
        parse = "".join(
            f"        let {a['name']} = owner({java_arg(a)})?;\n" for a in loc.get("args", [])
        )
        get = f"handle({name})?.{local_call(loc)}" + (
            ".to_string()" if loc["answer"] == "text" else ""
        )
        env_arg = "env" if loc["answer"] == "text" else "_"
        s += "\n" + doc_lines(loc["doc"] + f"{more} Local: no round trip.", "")
        s += f"""#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_{java_name}<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    {name}: jlong,
{params}) -> {ty} {{
    entry(&mut env, {default}, |{env_arg}| {{
{parse}        let v = {get};
        {value if loc["answer"] == "text" else f"Ok({value})"}
    }})
}}
"""
    return s


def java_ops(t: dict, ops: list[dict]) -> str:
    name, jname = t["name"], camel(t["name"])
    s = ""
    for op in ops:
        args = op.get("args", [])
        params, parse = "", ""
        for a in args:
            params += f"    {java_arg(a)}: {J_ARGS[a['kind']][0]},\n"
            if a["kind"] in ("count", "term"):
                parse += f"        let {a['name']} = count_from_i64({a['name']}, \"{camel(a['name'])}\")?;\n"
            elif a["kind"] == "permits":
                parse += (
                    f"        let {a['name']} = polylock::args::permits_from_i64({a['name']}, "
                    f"\"{camel(a['name'])}\")?;\n"
                )
            elif a["kind"] == "lease":
                parse += (
                    f"        let {a['name']} = polylock::args::lease_millis(lease_ms, \"lease time\")?;\n"
                )
            elif a["kind"] == "id":
                parse += f"        let {a['name']} = string(env, &{a['name']}, \"permit id\")?;\n"
            elif a["kind"] == "wait":
                parse += f"        let {a['name']} = Wait::from_millis(wait_ms, \"wait time\")?;\n"
            elif a["kind"] == "owner":
                parse += f"        let {a['name']} = owner({java_arg(a)})?;\n"
            elif a["kind"] == "token":
                parse += f"        let {a['name']} = polylock::args::token_from_i64({a['name']}, \"token\")?;\n"
            elif a["kind"] == "commands":
                parse += f"        let {a['name']} = byte_commands(env, &{a['name']})?;\n"
        call = f"inner.{core_call(op)}"
        java_name = f"{jname}{camel(op['name'], True)}"
        answer = op["answer"]
        s += "\n" + doc_lines(op["doc"], "")
        asyncs = []
        if op.get("waits"):
            if answer == "bool":
                done_doc = "with 1 (true) or 0 (false)"
                won = f"Ok(Won::value(i64::from({call}.await?)))"
            elif answer == "held":
                done_doc = "with the fencing token (TIMEOUT when the wait ran out)"
                won = (
                    f"let a = {call}.await?;\n"
                    "            Ok(Won::value(a.fencing_token as i64).give_back(async move {\n"
                    f"                let _ = inner.{op['undo']}(owner).await;\n"
                    "            }))"
                )
            elif answer == "leadership":
                done_doc = "with the term, or 0 when the wait ran out"
                undo = (
                    f".give_back(async move {{\n                    let _ = inner.{op['undo']}().await;\n"
                    "                })"
                    if op.get("undo")
                    else ""
                )
                won = (
                    f"Ok(match {call}.await? {{\n"
                    f"                Some(l) => Won::value(l.term as i64){undo},\n"
                    "                None => Won::value(0),\n            })"
                )
            elif answer == "permit":
                done_doc = "with the permit's id as its text (TIMEOUT when the wait ran out)"
                won = (
                    f"let p = {call}.await?;\n            let id = p.id.clone();\n"
                    "            Ok(Won::text(p.id).give_back(async move {\n"
                    f"                let _ = inner.{op['undo']}(&id).await;\n"
                    "            }))"
                )
            elif answer == "permits":
                done_doc = "with 1, or a lease handle when `lease` (TIMEOUT when the wait ran out)"
                params += "    lease: jboolean,\n"
                won = f"let p = {call}.await?;\n            Ok(taken(inner, p, lease != JNI_FALSE))"
            else:
                sys.exit(f"{t['table']}: {op['name']}: Java waits answer bool, held, leadership or permit")
            asyncs.append((done_doc, won))
        else:
            ty, default, _ = J_ANSWERS[answer]
            ret = "" if answer == "none" else f" -> {ty}"
            if answer == "permits?":
                params += "    lease: jboolean,\n"
                parse += "        let giver = handle(" + name + ")?.clone();\n"
            conv = {
                "none": f"block(async move {{ {call}.await }})",
                "bool": f"Ok(jbool(block(async move {{ {call}.await }})?))",
                "count": f"Ok(block(async move {{ {call}.await }})?.min(i64::MAX as u64) as jlong)",
                "signed": f"block(async move {{ {call}.await }})",
                "holds": f"Ok(block(async move {{ {call}.await }})?.min(i32::MAX as u32) as jint)",
                "released": f"Ok(match block(async move {{ {call}.await }})? {{\n"
                "            Released::StillHeld(n) => n.min(i32::MAX as u32) as jint,\n"
                "            Released::Freed => 0,\n        })",
                "lease_left": f"block(async move {{ Ok({call}.await?.as_millis_code()) }})",
                "permit?": f"match block(async move {{ {call}.await }})? {{\n"
                "            Some(p) => java_string(env, &p.id),\n"
                "            None => Ok(std::ptr::null_mut()),\n        }",
                "permits?": f"match block(async move {{ {call}.await }})? {{\n"
                "            None => Ok(0),\n"
                "            Some(p) if lease != JNI_FALSE => Ok(LeaseHandle::into_raw(giver, p)),\n"
                "            Some(_) => Ok(1),\n        }",
                "leader?": f"match block(async move {{ {call}.await }})? {{\n"
                "            Some(l) => string_array(env, &[l.identity, l.term.to_string()]),\n"
                "            None => Ok(std::ptr::null_mut()),\n        }",
                "texts": f"let v = block(async move {{ {call}.await }})?;\n        string_array(env, &v)",
                "replies": f"let v = block(async move {{ {call}.await }})?;\n        reply_array(env, v)",
                "token?": f"Ok(block(async move {{ {call}.await }})?.map_or(0, |t| t.min(i64::MAX as u64) as jlong))",
            }[answer]
            needs_env = answer in ("leader?", "texts", "permit?", "replies") or any(
                uses_kind([op], k) for k in ("id", "commands")
            )
            env_arg = "env" if needs_env else "_"
            s += f"""#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_{java_name}<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    {name}: jlong,
{params}){ret} {{
    entry(&mut env, {default}, |{env_arg}| {{
{parse}        let inner = handle({name})?.clone();
        {conv}
    }})
}}
"""
            if op.get("java_async"):
                won = {
                    "bool": f"Ok(Won::value(i64::from({call}.await?)))",
                    "released": f"Ok(Won::value(match {call}.await? {{\n"
                    "                Released::StillHeld(n) => i64::from(n),\n"
                    "                Released::Freed => 0,\n            }))",
                }[answer]
                done_doc = {
                    "bool": "with 1 (true) or 0 (false)",
                    "released": "with the holds the owner keeps",
                }[answer]
                s += "\n" + doc_lines(f"The same, started on the runtime.", "")
                asyncs.append((done_doc, won))
        for done_doc, won in asyncs:
            s += doc_lines(f"Started: completes `future` {done_doc}; returns the cancel handle.", "")
            s += f"""#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_{java_name}Async<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    {name}: jlong,
{params}    future: JObject<'l>,
) -> jlong {{
    entry(&mut env, 0, |env| {{
{parse}        let inner = handle({name})?.clone();
        start(env, &future, async move {{ {won} }})
    }})
}}
"""
    return s


# A `Lease`'s native side, for a table whose operations answer `permits`: the permits of one
# acquire, given back exactly (ZooKeeper, etcd: those leases, not any of this client's).
JAVA_LEASES = """
/// The permits of one acquire, behind a Java `Lease` (a `Box<LeaseHandle>` as a `long`).
struct LeaseHandle {
    semaphore: CORE,
    permits: Permits,
}

impl LeaseHandle {
    fn into_raw(semaphore: CORE, permits: Permits) -> jlong {
        Box::into_raw(Box::new(LeaseHandle { semaphore, permits })) as jlong
    }

    /// Take back a handle from `into_raw`.
    ///
    /// # Safety
    /// `lease` came from `into_raw` and is taken back once.
    unsafe fn from_raw(lease: jlong) -> Box<LeaseHandle> {
        // SAFETY: see above.
        unsafe { Box::from_raw(lease as *mut LeaseHandle) }
    }

    async fn give_back(self) -> Result<()> {
        self.permits.release(&self.semaphore).await
    }
}

/// What Java gets for permits taken: 1, or a lease handle when `lease` is true; given back if the
/// call was cancelled meanwhile.
fn taken(semaphore: CORE, p: Permits, lease: bool) -> Won {
    if lease {
        let handle = LeaseHandle::into_raw(semaphore, p);
        // SAFETY: run only if Java never takes (or refuses) the handle, which it then forgets.
        Won::value(handle).give_back(async move {
            let _ = unsafe { LeaseHandle::from_raw(handle) }.give_back().await;
        })
    } else {
        Won::value(1).give_back(async move {
            let _ = p.release(&semaphore).await;
        })
    }
}

/// Give back a lease's permits (exactly its own leases on ZooKeeper and etcd) and free its
/// handle, which is freed however the release ends.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_leaseReturn<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    lease: jlong,
) {
    entry(&mut env, (), |_| {
        if lease == 0 {
            return Ok(());
        }
        // SAFETY: a handle from a try or a wait that Java returns once (Lease.close is
        // idempotent).
        let handle = unsafe { LeaseHandle::from_raw(lease) };
        block(async move { handle.give_back().await })
    })
}

/// Whether a lease's permits were lost (ZooKeeper, etcd: its session ended). Local.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_leaseIsLost<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    lease: jlong,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |_| {
        if lease == 0 {
            return Ok(JNI_FALSE);
        }
        // SAFETY: a live handle (Java checks that the lease is not returned, under its lock).
        let handle = unsafe { &*(lease as *const LeaseHandle) };
        Ok(jbool(handle.permits.is_lost()))
    })
}
"""


def javadoc(text: str) -> str:
    """A Javadoc comment at the class body's indent, on one line when it fits in 100 columns."""
    one = f"    /** {text} */\n"
    if len(one) <= 101:
        return one
    return "    /**\n" + doc_lines(text, "    ", " *") + "     */\n"


def java_natives(t: dict) -> str:
    jname = camel(t["name"])
    if hand(t):
        s = doc_lines(f"{t['doc']} On a handle from {jname}New.", "    ", "//")
    else:
        s = doc_lines(f"{t['doc']} A native handle: {jname}New .. {jname}Free.", "    ", "//")
        extra = "".join(f", String {camel(a['name'])}" for a in open_args(t))
        s += f"    static native long {jname}New(long client, String name{extra});\n\n"
        s += f"    static native void {jname}Free(long {jname});\n"
    for i, loc in enumerate(locals_for(t, "java")):
        _, _, ty, _, more = J_LOCALS[loc["answer"]]
        args = "".join(
            f", {J_ARGS[a['kind']][1]} {camel(java_arg(a))}" for a in loc.get("args", [])
        )
        if i or not hand(t):
            s += "\n"
        s += javadoc(loc["doc"] + f"{more} Local.")
        s += f"    static native {ty} {jname}{camel(loc['name'], True)}(long {jname}{args});\n"
    for op in ops_for(t, "java"):
        args = "".join(
            f", {J_ARGS[a['kind']][1]} {camel(java_arg(a))}" for a in op.get("args", [])
        )
        java_name = f"{jname}{camel(op['name'], True)}"
        if op["answer"] in ("permits", "permits?"):
            args += ", boolean lease"
        if op.get("waits"):
            done = {
                "bool": "with 1 (true) or 0 (false)",
                "held": "with the fencing token (TIMEOUT when the wait ran out)",
                "leadership": "with the term, or 0 when the wait ran out",
                "permit": "with the permit's id as its text (TIMEOUT when the wait ran out)",
                "permits": "with 1, or a lease handle when {@code lease} (TIMEOUT when the wait"
                " ran out)",
            }[op["answer"]]
            s += "\n" + javadoc(
                op["doc"] + f" Completes {{@code future}} {done}; returns the cancel handle."
            )
            s += f"    static native long {java_name}Async(long {jname}{args}, NativeFuture future);\n"
        else:
            doc = op["doc"] + {
                "permits?": " 0 if not taken, else 1, or a lease handle when {@code lease}.",
                "lease_left": " -2 when nobody holds it, -1 when held with no expiry, else the ms"
                " left.",
                "replies": " Each reply is null, a Long, a String (a status, or bulk text that is"
                " UTF-8), a byte[] (other bulk bytes) or an Object[] (an array reply).",
                "token?": " 0 for none.",
            }.get(op["answer"], "")
            s += "\n" + javadoc(doc)
            s += f"    static native {J_ANSWERS[op['answer']][2]} {java_name}(long {jname}{args});\n"
            if op.get("java_async"):
                done = {"bool": "1 (true) or 0 (false)", "released": "the holds the owner keeps"}[
                    op["answer"]
                ]
                s += "\n" + javadoc(
                    f"The same, started: completes {{@code future}} with {done}; returns the cancel"
                    " handle."
                )
                s += f"    static native long {java_name}Async(long {jname}{args}, NativeFuture future);\n"
    if any(op["answer"] == "permits" for op in ops_for(t, "java")):
        s += "\n" + javadoc(
            "Gives back a lease's own permits and frees the handle (always, however it ends)."
        )
        s += "    static native void leaseReturn(long lease);\n"
        s += "\n" + javadoc("Whether a lease's permits were lost; local.")
        s += "    static native boolean leaseIsLost(long lease);\n"
    return s


# ---- the error table -------------------------------------------------------------------------


def load_errors(path: pathlib.Path) -> list[dict]:
    with path.open("rb") as f:
        kinds = tomllib.load(f)["kind"]
    where = path.relative_to(ROOT)
    names = {k["name"] for k in kinds}
    for i, k in enumerate(kinds):
        for key in ("name", "code", "variant", "doc", "description", "python"):
            if key not in k:
                sys.exit(f"{where}: kind {i + 1}: no '{key}'")
        if k["code"] != i + 1:
            sys.exit(f"{where}: {k['name']}: codes run 1, 2, 3, ... in order (got {k['code']})")
        same = k["python"].get("same_as")
        if same and same not in names:
            sys.exit(f"{where}: {k['name']}: python same_as names no kind ('{same}')")
    return kinds


def rust_str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def core_errors(kinds: list[dict]) -> str:
    s = "/// What went wrong, with a stable numeric code and name.\n"
    s += "#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]\n#[non_exhaustive]\n#[repr(u32)]\n"
    s += "pub enum ErrorKind {\n"
    for k in kinds:
        s += doc_lines(k["doc"], "    ") + f"    {k['variant']} = {k['code']},\n"
    s += "}\n\nimpl ErrorKind {\n    /// Every kind, in code order.\n"
    s += f"    pub const ALL: [ErrorKind; {len(kinds)}] = [\n"
    s += "".join(f"        ErrorKind::{k['variant']},\n" for k in kinds)
    s += "    ];\n\n"
    s += (
        "    /// The stable upper-case name (`NOT_OWNER`); bindings derive their identifiers from it\n"
        "    /// (`POLYLOCK_NOT_OWNER`, `ERR_POLYLOCK_NOT_OWNER`, `Code.NOT_OWNER`).\n"
        "    pub fn name(self) -> &'static str {\n        match self {\n"
    )
    s += "".join(f"            ErrorKind::{k['variant']} => {rust_str(k['name'])},\n" for k in kinds)
    s += "        }\n    }\n\n"
    s += (
        "    /// A short static description, for places that cannot carry the detailed message.\n"
        "    pub fn description(self) -> &'static str {\n        match self {\n"
    )
    s += "".join(
        f"            ErrorKind::{k['variant']} => {rust_str(k['description'])},\n" for k in kinds
    )
    s += "        }\n    }\n}\n"
    return s


def c_errors(kinds: list[dict]) -> str:
    return "".join(
        doc_lines(k["doc"], "") + f"pub const POLYLOCK_{k['name']}: polylock_result = {k['code']};\n"
        for k in kinds
    )


def python_error_class(kinds: list[dict]) -> str:
    s = "/// The `polylock._errors` class of each kind of core's error table.\n"
    s += "pub(crate) fn error_class(kind: ErrorKind) -> &'static str {\n    match kind {\n"
    for k in kinds:
        if "class" not in k["python"]:
            continue
        alike = [k] + [x for x in kinds if x["python"].get("same_as") == k["name"]]
        pattern = " | ".join(f"ErrorKind::{x['variant']}" for x in alike)
        s += f"        {pattern} => {rust_str(k['python']['class'])},\n"
    s += '        _ => "InternalError",\n    }\n}\n'
    return s


def py_doc(text: str) -> str:
    return re.sub(r"`([^`]+)`", r"``\1``", text)


def python_error_classes(kinds: list[dict]) -> str:
    classes = []
    for k in kinds:
        py = k["python"]
        if "class" not in py:
            continue
        bases = "PolylockError" + (f", {py['base']}" if "base" in py else "")
        also = [x["name"] for x in kinds if x["python"].get("same_as") == k["name"]]
        doc = py_doc(k["doc"]) + (
            f" Raised for {', '.join(also)} too (its ``code`` says which)." if also else ""
        )
        docstring = textwrap.fill(
            f'"""{doc}"""', width=100, initial_indent="    ", subsequent_indent="    ",
            break_long_words=False, break_on_hyphens=False,
        )
        classes.append(
            f"class {py['class']}({bases}):\n{docstring}\n\n"
            f'    code, number = "{k["name"]}", {k["code"]}\n'
        )
    return "\n\n" + "\n\n".join(classes) + "\n\n"


def python_error_names(kinds: list[dict]) -> list[str]:
    return ["PolylockError"] + [k["python"]["class"] for k in kinds if "class" in k["python"]]


def python_all(kinds: list[dict]) -> str:
    return "__all__ = [\n" + "".join(f'    "{n}",\n' for n in python_error_names(kinds)) + "]\n"


def python_imports(kinds: list[dict]) -> str:
    return "from ._errors import (\n" + "".join(
        f"    {n},\n" for n in sorted(python_error_names(kinds))
    ) + ")\n"


def node_numbers(kinds: list[dict]) -> str:
    s = "// The one error table of polylock's core (core/api/errors.toml): each kind's stable number.\n"
    s += "const NUMBERS = Object.freeze({\n"
    s += "".join(f"  {k['name']}: {k['code']},\n" for k in kinds)
    return s + "});\n"


def node_classes(kinds: list[dict]) -> str:
    return "".join(
        f"const {k['node']} = kindClass('{k['node']}', '{k['name']}');\n" for k in kinds if "node" in k
    )


def node_exports(kinds: list[dict]) -> str:
    return "  PolylockError,\n" + "".join(f"  {k['node']},\n" for k in kinds if "node" in k)


def ts_doc(text: str) -> str:
    """A TSDoc comment at the top level, on one line when it fits in 100 columns."""
    one = f"/** {text} */\n"
    if len(one) <= 101:
        return one
    lines = textwrap.wrap(text, width=93, break_long_words=False, break_on_hyphens=False)
    return "".join(("/** " if i == 0 else " * ") + l + "\n" for i, l in enumerate(lines))[:-1] + " */\n"


def node_types(kinds: list[dict]) -> str:
    names = ", ".join(k["name"] for k in kinds if "node" in k)
    out = ts_doc(
        f"`code` is `ERR_POLYLOCK_<NAME>`: {names}; `number` is the kind's stable number in "
        "polylock's one error table (`errorNumbers`). Each kind has its subclass below. Bad "
        "arguments are TypeError/RangeError with code ERR_POLYLOCK_INVALID_ARGUMENT and number 2."
    )
    out += (
        "export class PolylockError extends Error {\n"
        "  constructor(message: string, name?: string);\n"
        "  readonly code: string;\n"
        "  readonly number: number;\n"
        "}\n"
    )
    for k in kinds:
        if "node" not in k:
            continue
        out += ts_doc(f"{k['name']} ({k['code']})" + (f": {k['node_doc']}" if "node_doc" in k else "."))
        out += f"export class {k['node']} extends PolylockError {{\n  constructor(message: string);\n}}\n"
    return out


def java_codes(kinds: list[dict]) -> str:
    s = ""
    for i, k in enumerate(kinds):
        one = f"        /** {k['doc']} */\n"
        if len(one) <= 101:
            s += one
        else:
            s += "        /**\n" + doc_lines(k["doc"], "        ", " *") + "         */\n"
        s += f"        {k['name']}({k['code']}){';' if i == len(kinds) - 1 else ','}\n"
    return s


# ---- files ------------------------------------------------------------------------------------


def rustfmt(text: str, where: pathlib.Path) -> str:
    r = subprocess.run(
        ["rustfmt", "--edition", "2021", "--emit", "stdout", "--quiet"],
        input=text, capture_output=True, text=True, cwd=ROOT,
    )
    if r.returncode != 0:
        sys.exit(f"rustfmt refused the generated {where.relative_to(ROOT)}:\n{r.stderr}\n{text}")
    return r.stdout


def section(
    text: str, where: str, table: str, body: str, comment: str, indent: str, part: str = ""
) -> str:
    """`text` with the generated section of `table` (and `part`, when a file has several)
    replaced by `body`."""
    label = f" ({part})" if part else ""
    begin = (
        f"{indent}{comment} BEGIN generated from core/api/{table}.toml{label} by `{COMMAND}`: "
        "do not edit\n"
    )
    end = f"{indent}{comment} END generated ({table}{', ' + part if part else ''})\n"
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
    if not pattern.search(text):
        sys.exit(f"{where}: no generated section for {table}{label} (add its BEGIN and END lines)")
    return pattern.sub(lambda _: begin + body + end, text, count=1)


# Where the error table goes: (file, part, maker, comment, indent).
ERROR_SECTIONS = [
    ("core/src/model/error.rs", "", core_errors, "//", ""),
    ("bindings-c/src/result.rs", "", c_errors, "//", ""),
    ("bindings-python/src/errors.rs", "", python_error_class, "//", ""),
    ("bindings-python/python/polylock/_errors.py", "classes", python_error_classes, "#", ""),
    ("bindings-python/python/polylock/_errors.py", "names", python_all, "#", ""),
    ("bindings-python/python/polylock/__init__.py", "", python_imports, "#", ""),
    ("bindings-node/index.js", "numbers", node_numbers, "//", ""),
    ("bindings-node/index.js", "classes", node_classes, "//", ""),
    ("bindings-node/index.js", "exports", node_exports, "//", "  "),
    ("bindings-node/index.d.ts", "", node_types, "//", ""),
    ("bindings-java/src/main/java/io/polylock/PolylockException.java", "", java_codes, "//", "        "),
]


def error_outputs(kinds: list[dict]) -> dict[pathlib.Path, str]:
    out: dict[pathlib.Path, str] = {}
    for rel, part, make, comment, indent in ERROR_SECTIONS:
        path = ROOT / rel
        text = out.get(path) or path.read_text()
        out[path] = section(text, rel, "errors", make(kinds), comment, indent, part)
    for path in out:
        if path.suffix == ".rs":
            out[path] = rustfmt(out[path], path)
    return out


def outputs(tables: list[dict]) -> dict[pathlib.Path, str]:
    out: dict[pathlib.Path, str] = {}
    makers = {"c": c_file, "python": python_file, "node": node_file, "java": java_file}
    for binding, make in makers.items():
        gen = ROOT / f"bindings-{binding}" / "src" / "gen"
        mine = [t for t in tables if for_runtime(t, binding)]
        mods = "".join(f"pub(crate) mod {t['table']};\n" for t in mine)
        listing = (
            f"//! The glue generated from the tables of core/api/ by `{COMMAND}`: do not edit.\n\n"
        )
        out[gen / "mod.rs"] = listing + mods
        for t in mine:
            out[gen / f"{t['table']}.rs"] = make(t)
    for path in list(out):
        out[path] = rustfmt(out[path], path)
    # The hand-written files with a generated section per table.
    sections = [
        (ROOT / "bindings-python/python/polylock/_native.pyi", python_stub, "#", "", "python"),
        (ROOT / "bindings-java/src/main/java/io/polylock/Native.java", java_natives, "//", "    ",
         "java"),
    ]
    for path, make, comment, indent, binding in sections:
        text = path.read_text()
        for t in tables:
            if not for_runtime(t, binding):
                continue
            text = section(text, str(path.relative_to(ROOT)), t["table"], make(t), comment, indent)
        out[path] = text
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="compare instead of writing")
    args = ap.parse_args()
    tables = [load(p) for p in sorted(API.glob("*.toml")) if p.stem != "errors"]
    out = outputs(tables)
    out.update(error_outputs(load_errors(API / "errors.toml")))
    stale = []
    for path, text in out.items():
        old = path.read_text() if path.exists() else None
        if old == text:
            continue
        if args.check:
            stale.append(str(path.relative_to(ROOT)))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print("generated files differ from core/api/ (run `" + COMMAND + "`):", file=sys.stderr)
        for s in stale:
            print(f"  {s}", file=sys.stderr)
        return 1
    if args.check:
        print(f"gen-bindings: {len(out)} generated files match core/api/ ({len(tables)} tables)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
