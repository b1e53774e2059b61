#!/bin/bash
# Prints, as "name value" lines, the numbers rbmemtrace needs from one Ruby build, read from the
# DWARF of its libruby (an unstripped build such as a ruby-build one), plus which symbols it has:
#
#   scripts/ruby-layout.sh /var/cache/rbmemtrace/rubies/3.3.8-ruby-build/lib/libruby.so.3.3.8
#
# Values: byte offsets and sizes in decimal; constants in decimal (flags also in hex in the name's
# ".hex" line where that reads better). A name that does not exist in this build prints "n/a" (that
# is the signal that the layout kind changed). Bit-fields print NAME.bitpos (bit offset from the start
# of the struct: the field is bit bitpos%32 of the 32-bit word at byte (bitpos/32)*4, little endian)
# and NAME.bits (width). Symbols print "sym NAME KIND" from nm (.symtab: t/T/b/B/d/D..., "-" = absent)
# and "dynsym NAME KIND" from nm -D.
set -euo pipefail

lib=${1:?usage: $0 LIBRUBY}
[ -f "$lib" ] || { echo "ruby-layout: no such file: $lib" >&2; exit 1; }
command -v gdb >/dev/null || { echo "ruby-layout: gdb is missing (apt-get install gdb)" >&2; exit 1; }
# (no "readelf | grep -q": with pipefail, grep's early exit can fail readelf with SIGPIPE)
case "$(readelf -S -W "$lib")" in *.debug_info*) ;; *) false ;; esac || {
    echo "ruby-layout: $lib has no DWARF (.debug_info): stripped?" >&2; exit 1; }

py=$(mktemp --suffix=.py)
trap 'rm -f "$py"' EXIT
cat > "$py" <<'PYEOF'
import gdb, re

def typ(name):
    return gdb.parse_and_eval("(%s *)0" % name).type.target()

def find_field(t, name):
    t = t.strip_typedefs()
    if t.code not in (gdb.TYPE_CODE_STRUCT, gdb.TYPE_CODE_UNION):
        return None
    for f in t.fields():
        if f.name == name:
            return f, 0
    for f in t.fields():
        if not f.name:                      # anonymous struct / union member
            r = find_field(f.type, name)
            if r:
                return r[0], f.bitpos + r[1]
    return None

def resolve(tname, path):
    t = typ(tname)
    bits, width, ftype = 0, 0, t
    for comp in path.split("."):
        m = re.match(r"^(\w+)(?:\[(\d+)\])?$", comp)
        r = find_field(t, m.group(1))
        if r is None:
            raise KeyError(comp)
        f, extra = r
        bits += f.bitpos + extra
        width = f.bitsize
        ftype = f.type
        t = f.type.strip_typedefs()
        if m.group(2) is not None:
            elt = t.target()
            bits += int(m.group(2)) * elt.sizeof * 8
            t = elt.strip_typedefs()
            ftype = elt
    return bits, width, ftype

def out(name, value):
    print("%s %s" % (name, value))

def off(name, tname, path):
    try:
        bits, width, _ = resolve(tname, path)
    except Exception:
        out(name, "n/a")
        return
    if width:
        out(name + ".bitpos", bits)
        out(name + ".bits", width)
    else:
        out(name, bits // 8)

def size(name, tname, path=None):
    try:
        if path:
            out(name, resolve(tname, path)[2].strip_typedefs().sizeof)
        else:
            out(name, typ(tname).sizeof)
    except Exception:
        out(name, "n/a")

def alen(name, tname, path):
    try:
        t = resolve(tname, path)[2].strip_typedefs()
        lo, hi = t.range()
        out(name, hi - lo + 1)
    except Exception:
        out(name, "n/a")

def const(name, expr=None, hexa=False):
    try:
        v = int(gdb.parse_and_eval("(long)(%s)" % (expr or name)))
        out(name, v)
        if hexa:
            out(name + ".hex", hex(v))
    except Exception:
        out(name, "n/a")

def enum(prefix, tname):
    try:
        t = typ(tname).strip_typedefs()
        for f in t.fields():
            out("%s.%s" % (prefix, f.name), f.enumval)
    except Exception:
        out(prefix, "n/a")

def macro(name, file):
    """a macro's definition from .debug_macro (-ggdb3), in the scope of FILE"""
    try:
        gdb.execute("list %s:1,1" % file, to_string=True)
        s = gdb.execute("info macro -a %s" % name, to_string=True)
        m = re.search(r"#define %s\s+(.*)" % re.escape(name), s)
        out(name, m.group(1).strip() if m else "n/a")
    except Exception:
        out(name, "n/a")

# ---- version
try:
    out("ruby_version", gdb.parse_and_eval("ruby_version").string())
except Exception:
    out("ruby_version", "n/a")

# ---- classes
size("RClass.sizeof", "struct RClass")
off("RClass.super", "struct RClass", "super")
off("RClass.m_tbl", "struct RClass", "m_tbl")
off("RClass.ptr", "struct RClass", "ptr")                         # 3.1: classext pointer
off("RClass.classext", "struct RClass_and_rb_classext_t", "classext")    # 3.3+: embedded
off("classext.super", "rb_classext_t", "super")
off("classext.m_tbl", "rb_classext_t", "m_tbl")
off("classext.iv_tbl", "rb_classext_t", "iv_tbl")
off("classext.iv_ptr", "rb_classext_t", "iv_ptr")
off("classext.allocator", "rb_classext_t", "as.class.allocator")
off("classext.allocator_31", "rb_classext_t", "allocator")
off("classext.attached_object", "rb_classext_t", "as.singleton_class.attached_object")
off("classext.classpath", "rb_classext_t", "classpath")
size("classext.sizeof", "rb_classext_t")
const("RUBY_FL_SINGLETON", hexa=True)
const("RUBY_FL_USHIFT")
const("RUBY_FL_USER0", hexa=True)

# ---- frames and iseqs
off("ec.vm_stack", "rb_execution_context_t", "vm_stack")
off("ec.vm_stack_size", "rb_execution_context_t", "vm_stack_size")
off("ec.cfp", "rb_execution_context_t", "cfp")
size("cfp.sizeof", "rb_control_frame_t")
off("cfp.pc", "rb_control_frame_t", "pc")
off("cfp.iseq", "rb_control_frame_t", "iseq")
off("cfp.self", "rb_control_frame_t", "self")
off("cfp.ep", "rb_control_frame_t", "ep")
off("cfp.bp", "rb_control_frame_t", "__bp__")
const("VM_FRAME_MAGIC_CFUNC", hexa=True)
const("VM_FRAME_MAGIC_MASK", hexa=True)
macro("VM_ENV_DATA_INDEX_ME_CREF", "vm.c")
macro("VM_ENV_DATA_INDEX_FLAGS", "vm.c")
off("iseq.body", "rb_iseq_t", "body")
off("body.type", "struct rb_iseq_constant_body", "type")
off("body.iseq_encoded", "struct rb_iseq_constant_body", "iseq_encoded")
off("body.location.pathobj", "struct rb_iseq_constant_body", "location.pathobj")
off("body.location.base_label", "struct rb_iseq_constant_body", "location.base_label")
off("body.location.label", "struct rb_iseq_constant_body", "location.label")
off("body.location.first_lineno", "struct rb_iseq_constant_body", "location.first_lineno")
size("body.location.first_lineno.sizeof", "struct rb_iseq_constant_body", "location.first_lineno")
off("body.insns_info.body", "struct rb_iseq_constant_body", "insns_info.body")
off("body.insns_info.positions", "struct rb_iseq_constant_body", "insns_info.positions")
off("body.insns_info.size", "struct rb_iseq_constant_body", "insns_info.size")
off("body.insns_info.succ_index_table", "struct rb_iseq_constant_body", "insns_info.succ_index_table")
off("body.local_iseq", "struct rb_iseq_constant_body", "local_iseq")
size("insn_info.sizeof", "struct iseq_insn_info_entry")
off("insn_info.line_no", "struct iseq_insn_info_entry", "line_no")
off("me.def", "rb_method_entry_t", "def")
off("me.owner", "rb_method_entry_t", "owner")
off("def.type", "rb_method_definition_t", "type")
off("def.body.iseq.iseqptr", "rb_method_definition_t", "body.iseq.iseqptr")
off("def.original_id", "rb_method_definition_t", "original_id")

# ---- strings, arrays, tables
off("RString.len", "struct RString", "len")
off("RString.as.heap.len", "struct RString", "as.heap.len")
off("RString.as.heap.ptr", "struct RString", "as.heap.ptr")
off("RString.as.embed.ary", "struct RString", "as.embed.ary")
const("RSTRING_NOEMBED", hexa=True)
off("RArray.as.heap.len", "struct RArray", "as.heap.len")
off("RArray.as.heap.ptr", "struct RArray", "as.heap.ptr")
off("RArray.as.ary", "struct RArray", "as.ary")
const("RARRAY_EMBED_FLAG", hexa=True)
const("RARRAY_EMBED_LEN_MASK", hexa=True)
const("RARRAY_EMBED_LEN_SHIFT")
off("st_table.entries_start", "st_table", "entries_start")
off("st_table.entries_bound", "st_table", "entries_bound")
off("st_table.entries", "st_table", "entries")
size("st_table_entry.sizeof", "st_table_entry")
off("id_table.capa", "struct rb_id_table", "capa")
off("id_table.num", "struct rb_id_table", "num")
off("id_table.items", "struct rb_id_table", "items")
size("id_table.item.sizeof", "item_t")
off("id_table.item.val", "item_t", "val")
off("RMoved.destination", "struct RMoved", "destination")
off("RTypedData.type", "struct RTypedData", "type")
off("RTypedData.typed_flag", "struct RTypedData", "typed_flag")
off("RTypedData.data", "struct RTypedData", "data")
off("thread.vm", "rb_thread_t", "vm")
off("thread.ec", "rb_thread_t", "ec")

# ---- symbols and IDs
off("rb_symbols.last_id", "rb_symbols_t", "last_id")
off("rb_symbols.next_id", "rb_symbols_t", "next_id")
off("rb_symbols.ids", "rb_symbols_t", "ids")
const("tLAST_OP_ID", hexa=True)
const("tNEXT_ID")
const("idInitialize", hexa=True)
const("ID_ENTRY_UNIT")
const("ID_ENTRY_SIZE")
enum("imemo", "enum imemo_type")
const("RUBY_T_MOVED", hexa=True)
const("RUBY_T_IMEMO", hexa=True)
const("RUBY_T_MASK", hexa=True)

# ---- VM -> objspace, GC counters
off("vm.objspace", "rb_vm_t", "objspace")
off("vm.gc.objspace", "rb_vm_t", "gc.objspace")
size("objspace.sizeof", "rb_objspace_t")
off("objspace.flags", "rb_objspace_t", "flags")
for b in ("mode", "immediate_sweep", "dont_gc", "dont_incremental", "during_gc", "during_compacting",
          "during_reference_updating", "during_minor_gc", "during_incremental_marking"):
    off("objspace.flags." + b, "rb_objspace_t", "flags." + b)
const("gc_mode_marking")
const("gc_mode_sweeping")
const("gc_mode_compacting")
off("objspace.total_allocated_objects", "rb_objspace_t", "total_allocated_objects")
off("objspace.profile.total_freed_objects", "rb_objspace_t", "profile.total_freed_objects")
off("objspace.profile.compact_count", "rb_objspace_t", "profile.compact_count")
off("objspace.profile.count", "rb_objspace_t", "profile.count")
off("objspace.marked_slots", "rb_objspace_t", "marked_slots")
# 3.2/3.3: size pools, each with an eden and a tomb heap
off("objspace.size_pools", "rb_objspace_t", "size_pools")
alen("objspace.size_pools.count", "rb_objspace_t", "size_pools")
size("size_pool.sizeof", "rb_size_pool_t")
off("size_pool.slot_size", "rb_size_pool_t", "slot_size")
off("size_pool.total_allocated_objects", "rb_size_pool_t", "total_allocated_objects")
off("size_pool.total_freed_objects", "rb_size_pool_t", "total_freed_objects")
off("size_pool.eden_heap", "rb_size_pool_t", "eden_heap")
off("size_pool.tomb_heap", "rb_size_pool_t", "tomb_heap")
# 3.4: heaps (the former size pools; no tomb)
off("objspace.heaps", "rb_objspace_t", "heaps")
alen("objspace.heaps.count", "rb_objspace_t", "heaps")
off("objspace.empty_pages_count", "rb_objspace_t", "empty_pages_count")
off("objspace.empty_pages", "rb_objspace_t", "empty_pages")
size("heap.sizeof", "rb_heap_t")
off("heap.slot_size", "rb_heap_t", "slot_size")
off("heap.total_allocated_objects", "rb_heap_t", "total_allocated_objects")
off("heap.total_freed_objects", "rb_heap_t", "total_freed_objects")
off("heap.free_pages", "rb_heap_t", "free_pages")
off("heap.pages", "rb_heap_t", "pages")
off("heap.sweeping_page", "rb_heap_t", "sweeping_page")
off("heap.total_pages", "rb_heap_t", "total_pages")
off("heap.total_slots", "rb_heap_t", "total_slots")
# all pages, sorted by address
off("objspace.heap_pages", "rb_objspace_t", "heap_pages")
off("objspace.heap_pages.sorted", "rb_objspace_t", "heap_pages.sorted")
off("objspace.heap_pages.allocated_pages", "rb_objspace_t", "heap_pages.allocated_pages")
off("objspace.heap_pages.sorted_length", "rb_objspace_t", "heap_pages.sorted_length")
off("objspace.heap_pages.freed_pages", "rb_objspace_t", "heap_pages.freed_pages")
off("objspace.heap_pages.range", "rb_objspace_t", "heap_pages.range")
# heap_pages.sorted: "array" = struct heap_page ** (3.3 and before), "darray" = rb_darray(struct heap_page *),
# a pointer to {rb_darray_meta_t meta; struct heap_page *data[]} (3.4)
try:
    _t = resolve("rb_objspace_t", "heap_pages.sorted")[2].strip_typedefs().target().strip_typedefs()
    out("objspace.heap_pages.sorted.kind", "darray" if _t.code == gdb.TYPE_CODE_STRUCT else "array")
except Exception:
    out("objspace.heap_pages.sorted.kind", "n/a")
off("darray.meta.size", "rb_darray_meta_t", "size")
off("darray.meta.capa", "rb_darray_meta_t", "capa")
size("darray.meta.sizeof", "rb_darray_meta_t")
# struct heap_page
size("heap_page.sizeof", "struct heap_page")
for f in ("slot_size", "total_slots", "free_slots", "final_slots", "pinned_slots", "flags",
          "flags.before_sweep", "flags.has_remembered_objects",
          "flags.has_uncollectible_wb_unprotected_objects", "flags.in_tomb",
          "size_pool", "heap", "free_next", "body", "start", "freelist", "page_node",
          "wb_unprotected_bits", "mark_bits", "uncollectible_bits", "marking_bits", "remembered_bits",
          "pinned_bits", "age_bits"):
    off("heap_page." + f, "struct heap_page", f)
size("heap_page.slot_size.sizeof", "struct heap_page", "slot_size")
alen("heap_page.mark_bits.count", "struct heap_page", "mark_bits")
alen("heap_page.age_bits.count", "struct heap_page", "age_bits")
off("heap_page_header.page", "struct heap_page_header", "page")
size("heap_page_header.sizeof", "struct heap_page_header")
for c in ("HEAP_PAGE_ALIGN", "HEAP_PAGE_ALIGN_MASK", "HEAP_PAGE_SIZE", "HEAP_PAGE_OBJ_LIMIT",
          "HEAP_PAGE_BITMAP_LIMIT", "HEAP_PAGE_BITMAP_SIZE", "BITS_SIZE", "BITS_BITLENGTH"):
    const(c)
size("RVALUE.sizeof", "RVALUE")
for m in ("HEAP_PAGE_ALIGN_LOG", "BASE_SLOT_SIZE", "RVALUE_AGE_BIT_COUNT", "RVALUE_OLD_AGE",
          "SIZE_POOL_COUNT", "HEAP_COUNT", "USE_RVARGC"):
    macro(m, GCFILE)
PYEOF

# the file that holds rb_objspace_t: gc.c up to 3.3, gc/default/default.c from 3.4
gcfile=gc.c
if gdb -batch -nx -q -ex 'info sources default.c' "$lib" 2>/dev/null | grep -q 'gc/default/default.c'; then
    gcfile=gc/default/default.c
fi
sed -i "s|GCFILE|\"$gcfile\"|" "$py"
gdb -batch -nx -q -ex "python exec(open('$py').read())" "$lib" 2>/dev/null

# symbols
nm_s=$(nm "$lib" 2>/dev/null || true)
nm_d=$(nm -D --defined-only "$lib" 2>/dev/null || true)
for s in rb_wb_protected_newobj_of rb_wb_unprotected_newobj_of rb_ec_wb_protected_newobj_of rb_newobj_of \
         rb_newobj rb_imemo_new rb_data_object_wrap rb_data_object_zalloc rb_data_typed_object_wrap \
         rb_data_typed_object_zalloc rb_alloc_tmp_buffer_with_count rb_class_allocate_instance \
         rb_imemo_tmpbuf_parser_heap ruby_current_ec ruby_current_vm_ptr rb_gc_obj_free rb_gc_update_tbl_refs \
         rb_gc_get_objspace rb_gc_count rb_thread_current ruby_global_symbols rb_objspace \
         gc_sweep_step gc_marks_finish gc_start gc_marks_start gc_sweep_start gc_sweep_finish gc_sweep \
         gc_marks gc_enter gc_exit ruby_options ruby_sig_finalize rb_id2str rb_cObject rb_cBasicObject \
         ruby_version; do
    k=$(awk -v s="$s" '$NF == s {print $(NF-1); exit}' <<<"$nm_s")
    printf 'sym %s %s\n' "$s" "${k:--}"
    k=$(awk -v s="$s" '$NF == s || $NF ~ ("^" s "@") {print $(NF-1); exit}' <<<"$nm_d")
    printf 'dynsym %s %s\n' "$s" "${k:--}"
done
printf 'usdt_notes %s\n' "$(readelf -n "$lib" | grep -c 'stapsdt' || true)"
