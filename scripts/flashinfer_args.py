"""Compares flashband's Python API with a FlashInfer source tree, argument by argument.

  PYTHONPATH=build/python:python python scripts/flashinfer_args.py /path/to/flashinfer/

For each FlashInfer entry point flashband follows (the single-request functions, the batch
and cascade wrappers, every public method and property of the wrappers), prints the
arguments FlashInfer has and flashband lacks ("missing"), those FlashInfer takes by position
and flashband only by keyword ("keyword-only here"), and flashband's own ("ours only").
FlashInfer is read as source (ast), never imported: it needs CUDA and torch. Where a
FlashInfer method takes **kwargs and forwards them to `_<name>_impl` (0.7's decode plan),
the impl's keywords count as the method's. Exits 1 when anything is missing.
"""
import ast
import inspect
import pathlib
import sys

import flashband

ENTRY_POINTS = {
    "decode.py": ["single_decode_with_kv_cache", "BatchDecodeWithPagedKVCacheWrapper"],
    "prefill.py": ["single_prefill_with_kv_cache", "BatchPrefillWithPagedKVCacheWrapper",
                   "BatchPrefillWithRaggedKVCacheWrapper"],
    "cascade.py": ["merge_state", "merge_state_in_place", "merge_states",
                   "MultiLevelCascadeAttentionWrapper"],
}


def _params(fn: ast.FunctionDef):
    """(positional names, keyword-only names) of a FlashInfer def, self and *args/**kwargs
    left out."""
    a = fn.args
    positional = [x.arg for x in a.posonlyargs + a.args if x.arg != "self"]
    return positional, [x.arg for x in a.kwonlyargs]


def flashinfer_api(path: pathlib.Path, name: str):
    """{member: (positional, keyword-only)} for a class (its public methods, __init__ and
    properties: () for a property), or {name: ...} for a function; the last def of a name
    wins (typing overloads come first)."""
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            found = {name: _params(node)}
        elif isinstance(node, ast.ClassDef) and node.name == name:
            defs = {f.name: f for f in node.body if isinstance(f, ast.FunctionDef)}
            found = {}
            for member, f in defs.items():
                if member.startswith("_") and member != "__init__":
                    continue
                property_ = any(isinstance(d, ast.Name) and d.id == "property" for d in f.decorator_list)
                found[member] = None if property_ else _params(f)
                impl = defs.get(f"_{member}_impl")
                if found[member] is not None and f.args.kwarg is not None and impl is not None:
                    found[member] = (found[member][0], found[member][1] + _params(impl)[1])
            for stmt in node.body:  # begin_forward = plan
                if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name):
                    for target in stmt.targets:
                        if isinstance(target, ast.Name) and not target.id.startswith("_"):
                            found[target.id] = found.get(stmt.value.id)
    return found


def ours(obj, member: str):
    """(positional names, keyword-only names) of flashband's member, or None for a property;
    raises AttributeError where flashband has no such member."""
    attr = inspect.getattr_static(obj, member) if inspect.isclass(obj) else obj
    if isinstance(attr, property):
        return None
    sig = inspect.signature(getattr(obj, member) if inspect.isclass(obj) else obj)
    kinds = inspect.Parameter
    params = [p for p in sig.parameters.values() if p.name != "self"]
    if any(p.kind == kinds.VAR_POSITIONAL for p in params) and any(p.kind == kinds.VAR_KEYWORD for p in params):
        return "*"  # forwards everything (begin_forward, run_return_lse)
    return ([p.name for p in params if p.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD)],
            [p.name for p in params if p.kind == kinds.KEYWORD_ONLY])


def compare(root: pathlib.Path) -> int:
    gaps = 0
    for file, names in ENTRY_POINTS.items():
        for name in names:
            theirs = flashinfer_api(root / file, name)
            mine_obj = getattr(flashband, name, None)
            if mine_obj is None:
                print(f"{name}: not in flashband")
                gaps += 1
                continue
            for member, fi in sorted(theirs.items()):
                label = name if member == name else f"{name}.{member}"
                try:
                    mine = ours(mine_obj, member) if member != name else ours(mine_obj, name)
                except AttributeError:
                    print(f"{label}: not in flashband")
                    gaps += 1
                    continue
                if fi is None or mine is None or mine == "*":
                    kind = "property" if fi is None else "forwards all"
                    print(f"{label}: present ({kind})")
                    continue
                fi_all, mine_all = fi[0] + fi[1], mine[0] + mine[1]
                missing = [n for n in fi_all if n not in mine_all]
                keyword_only = [n for n in fi[0] if n in mine[1]]
                if fi[0][:len(mine[0])] != mine[0][:len(fi[0])]:
                    keyword_only.append(f"(positional order differs: {fi[0]} / {mine[0]})")
                extra = [n for n in mine_all if n not in fi_all]
                gaps += bool(missing)
                print(f"{label}: missing {missing} | keyword-only here {keyword_only} | ours only {extra}")
    return gaps


if __name__ == "__main__":
    sys.exit(1 if compare(pathlib.Path(sys.argv[1])) else 0)
