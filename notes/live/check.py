#!/usr/bin/env python3
"""Live check of a Ruby layout (rbmemtrace notes/live).

    check.py LAYOUT PID INFO.json

LAYOUT: "name value" lines (scripts/ruby-layout.sh output of a build of the same upstream version, or
a hand-made file for 3.1). PID: a Ruby sleeping in notes/live/target.rb; INFO.json what it wrote.
Reads /proc/PID/mem with those offsets and compares with what Ruby said: objspace counters vs GC.stat,
heap census (every page of heap_pages.sorted: page header back-pointer, slots, live/free vs
ObjectSpace.count_objects, eden page lists vs GC.stat_heap), mark / age / old bits of a known old and a
known young object, GC flags, class path and attached object, FL_SINGLETON, frame walk vs caller labels.
Prints one line per check: ok / MISMATCH, and the numbers.
"""
import json, struct, sys

lay = {}
for line in open(sys.argv[1]):
    k, _, v = line.strip().partition(" ")
    lay[k] = v
pid = int(sys.argv[2])
info = json.load(open(sys.argv[3]))
mem = open("/proc/%d/mem" % pid, "rb", buffering=0)

def has(k): return lay.get(k, "n/a") not in ("n/a", "")
def L(k): return int(lay[k], 0)
def rd(a, n):
    mem.seek(a); return mem.read(n)
def u64(a): return struct.unpack("<Q", rd(a, 8))[0]
def u32(a): return struct.unpack("<I", rd(a, 4))[0]
def u16(a): return struct.unpack("<H", rd(a, 2))[0]
def bit(base, name):
    bp = L(name + ".bitpos"); w = L(name + ".bits")
    return (u32(base + (bp // 32) * 4) >> (bp % 32)) & ((1 << w) - 1)

fails = 0
def check(what, got, want, ok=None):
    global fails
    good = (got == want) if ok is None else ok
    fails += 0 if good else 1
    print("%-9s %-52s got %s, expected %s" % ("ok" if good else "MISMATCH", what, got, want))

def rstring(v):
    flags = u64(v)
    noembed = L("RSTRING_NOEMBED")
    if has("RString.len"):
        n = u64(v + L("RString.len"))
    elif flags & noembed:
        n = u64(v + L("RString.as.heap.len"))
    else:                                   # 3.1: embedded length in the flags
        n = (flags & 0x7c000) >> 14
    if flags & noembed:
        return rd(u64(v + L("RString.as.heap.ptr")), n).decode(errors="replace")
    return rd(v + L("RString.as.embed.ary"), n).decode(errors="replace")

st = info["stat"]
print("#", info["description"], "pid", pid)

# --- VM and objspace
th = u64(info["thread"] + L("RTypedData.data"))
vm = u64(th + L("thread.vm"))
vmoff = L("vm.objspace") if has("vm.objspace") else L("vm.gc.objspace")
os_ = u64(vm + vmoff)
print("# thread %#x vm %#x objspace %#x (vm+%d)" % (th, vm, os_, vmoff))

pools_key = "objspace.size_pools" if has("objspace.size_pools") else "objspace.heaps"
pool_sz = L("size_pool.sizeof") if has("objspace.size_pools") else L("heap.sizeof")
npools = L(pools_key + ".count")
pfx = "size_pool." if has("objspace.size_pools") else "heap."
pools = [os_ + L(pools_key) + i * pool_sz for i in range(npools)]
if has(pfx + "total_allocated_objects"):
    alloc = sum(u64(p + L(pfx + "total_allocated_objects")) for p in pools)
    freed = sum(u64(p + L(pfx + "total_freed_objects")) for p in pools)
else:                                       # 3.1: one counter
    alloc = u64(os_ + L("objspace.total_allocated_objects"))
    freed = u64(os_ + L("objspace.profile.total_freed_objects"))
check("total_allocated_objects (objects made after GC.stat)", alloc - st["total_allocated_objects"],
      "0..200", 0 <= alloc - st["total_allocated_objects"] <= 200)
check("total_freed_objects", freed, st["total_freed_objects"])
check("profile.compact_count", u64(os_ + L("objspace.profile.compact_count")), st.get("compact_count"))
check("profile.count (GC.count)", u64(os_ + L("objspace.profile.count")), st["count"])
slot_sizes = [u16(p + L(pfx + "slot_size")) for p in pools]
print("# %d pools/heaps, slot sizes %s" % (npools, slot_sizes))
if "stat_heap" in info:
    check("slot sizes vs GC.stat_heap", slot_sizes,
          [info["stat_heap"][str(i)]["slot_size"] for i in range(npools)])
fl = os_ + L("objspace.flags")
for f in ("during_gc", "during_incremental_marking", "during_compacting", "mode"):
    if has("objspace.flags.%s.bitpos" % f):
        check("objspace.flags.%s while sleeping" % f, bit(os_, "objspace.flags." + f), 0)

# --- heap census: every page, sorted by address
align = L("HEAP_PAGE_ALIGN")
sorted_p = u64(os_ + L("objspace.heap_pages.sorted"))
npages = u64(os_ + L("objspace.heap_pages.allocated_pages"))
if lay.get("objspace.heap_pages.sorted.kind") == "darray":   # 3.4: rb_darray(struct heap_page *)
    n_d = u64(sorted_p + L("darray.meta.size"))
    print("# darray size %d, allocated_pages %d" % (n_d, npages))
    npages = n_d
    sorted_p += L("darray.meta.sizeof")
HP = "heap_page."
total = live = free = empty_pages = bad_hdr = 0
per_type = {}
eden_pages_by_size = {}
def slot_range(pg):
    return u64(pg + L(HP + "start")), u16(pg + L(HP + "total_slots")), u16(pg + L(HP + "slot_size"))
pages = []
for i in range(npages):
    pg = u64(sorted_p + 8 * i)
    start, n, ssz = slot_range(pg)
    if n == 0:                              # 3.4: a page in the global empty pool
        empty_pages += 1
        continue
    pages.append(pg)
    if u64(start & ~(align - 1)) != pg:
        bad_hdr += 1
    f = 0
    for s in range(n):
        fl_ = u64(start + s * ssz)
        if fl_ == 0:
            f += 1
        else:
            t = fl_ & 0x1f
            per_type[t] = per_type.get(t, 0) + 1
    total += n
    free += f
    live += n - f
    intomb = bit(pg, HP + "flags.in_tomb") if has(HP + "flags.in_tomb.bitpos") else 0
    if not intomb:
        eden_pages_by_size[ssz] = eden_pages_by_size.get(ssz, 0) + 1
co = info["count_objects"]
check("pages: header back-pointer == page (all %d)" % len(pages), bad_hdr, 0)
check("census: total slots vs count_objects TOTAL", total, co["TOTAL"])
check("census: free slots vs count_objects FREE (allocs after it)", co["FREE"] - free, "0..200",
      0 <= co["FREE"] - free <= 200)
check("census: T_STRING live vs count_objects", per_type.get(5, 0) - co.get("T_STRING", 0), "0..100",
      0 <= per_type.get(5, 0) - co.get("T_STRING", 0) <= 100)
if empty_pages:
    print("# %d empty pages (total_slots 0) in sorted" % empty_pages)
if "stat_heap" in info:
    got = [eden_pages_by_size.get(s, 0) for s in slot_sizes]
    check("eden pages per pool vs GC.stat_heap heap_eden_pages", got,
          [info["stat_heap"][str(i)]["heap_eden_pages"] for i in range(npools)])
# the eden page list of each pool
heap_base = (lambda p: p + L("size_pool.eden_heap")) if has("size_pool.eden_heap") else (lambda p: p)
listed = []
for p in pools:
    h = heap_base(p)
    head = h + L("heap.pages")
    node, k = u64(head), 0
    while node != head and k < 1000000:
        k += 1
        node = u64(node)
    listed.append(k)
    check("heap.pages list length == heap.total_pages", k, u64(h + L("heap.total_pages")))
check("Σ eden list lengths == eden pages in sorted", sum(listed), sum(eden_pages_by_size.values()))

# --- bits of a known old and a known young object
def obj_bits(o):
    pg = u64(o & ~(align - 1))
    base_slot = slot_sizes[0]
    num = (o & (align - 1)) // base_slot
    idx, off = num // 64, num % 64
    r = {}
    for b in ("mark_bits", "uncollectible_bits", "marking_bits", "pinned_bits", "wb_unprotected_bits"):
        if has(HP + b):
            r[b] = (u64(pg + L(HP + b) + 8 * idx) >> off) & 1
    if has(HP + "age_bits"):
        aidx, aoff = num // 32, (num % 32) * 2
        r["age"] = (u64(pg + L(HP + "age_bits") + 8 * aidx) >> aoff) & 3
    else:                                   # 3.1: age in the flags (FL_PROMOTED0/1 = bits 5, 6)
        r["age"] = (u64(o) >> 5) & 3
    r["flags_bit5"] = (u64(o) >> 5) & 1
    return r
ob, yb = obj_bits(info["old"]), obj_bits(info["young"])
print("# old   %s %s" % (ob, info["old_dump"]))
print("# young %s %s" % (yb, info["young_dump"]))
check("old object: age 3", ob["age"], 3)
check("old object: uncollectible (old) bit", ob["uncollectible_bits"], 1)
check("old object: marked by the last GC", ob["mark_bits"], 1)
check("old object: FL_PROMOTED (flags bit 5)", ob["flags_bit5"], 1)
check("young object: age 0", yb["age"], 0)
check("young object: not old", yb["uncollectible_bits"], 0)

# --- classes
if has("RClass.classext"):
    ext = info["object"] + L("RClass.classext")
else:
    ext = u64(info["object"] + L("RClass.ptr"))
if has("classext.classpath"):
    check("Object classext.classpath", rstring(u64(ext + L("classext.classpath"))), "Object")
sfl = u64(info["object_singleton"])
check("Object.singleton_class flags & FL_SINGLETON", bool(sfl & L("RUBY_FL_SINGLETON")), True)
check("Object flags & FL_SINGLETON", bool(u64(info["object"]) & L("RUBY_FL_SINGLETON")), False)
if has("classext.attached_object"):
    sext = info["object_singleton"] + L("RClass.classext")
    check("singleton attached_object == Object", u64(sext + L("classext.attached_object")), info["object"])
check("old string via RString", rstring(info["old_str"])[:14], "an old string ")
check("young (embedded) string via RString", rstring(info["young_str"]), "short")

# --- frames
ec = u64(th + L("thread.ec"))
cfp = u64(ec + L("ec.cfp"))
stack = u64(ec + L("ec.vm_stack")); ssize = u64(ec + L("ec.vm_stack_size"))
end = stack + 8 * ssize
labels = []
while cfp < end:
    iseq = u64(cfp + L("cfp.iseq"))
    if iseq and (u64(iseq) & 0x1f) == L("RUBY_T_IMEMO") and ((u64(iseq) >> 12) & 0xf) == L("imemo.imemo_iseq"):
        body = u64(iseq + L("iseq.body"))
        labels.append(rstring(u64(body + L("body.location.label"))))
    cfp += L("cfp.sizeof")
want = [l.split("#")[-1].split(".")[-1] for l in info["callers"]]   # 3.4 labels say Object#c
check("frame walk (cfp %d B) labels" % L("cfp.sizeof"), labels[:len(want)], want)
print("# %d checks failed" % fails)
sys.exit(1 if fails else 0)
