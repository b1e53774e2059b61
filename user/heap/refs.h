/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What one heap object references, as Ruby's GC marks it (gc_mark_children
 * of 3.1-3.4), decoded from the words of its slot and the memory they point
 * to, each reference with a label a Ruby programmer reads: an ivar, a
 * constant, an element, a hash key or value, a struct member, a captured
 * local, the class.  Pure: the decoders never read the target themselves
 * for an object's own memory, they ask for it (need), so one decoder serves
 * two drivers:
 *
 *   the heap walk (heap/refgraph.c) batches every object's needs of a page
 *   batch into a few process_vm_readv calls and resumes each decoder with
 *   its bytes; labels are ignored there;
 *   a single object (refs_decode_now) reads its needs at once and keeps the
 *   labels: the paths printed are labelled, and re-verified, that way.
 *
 * Metadata shared by many objects (shapes, data types, a class's ivar
 * index table) is read through struct refs_meta, synchronously and cached:
 * a heap has thousands of those, not millions.
 *
 * What is not decoded, and why, is counted (struct refs_gaps): a T_DATA
 * whose mark function is C code (a C extension's), imemo types that hold
 * no user objects, objects whose memory could not be read.  Weak holders
 * (ObjectSpace::WeakMap) are decoded as holding nothing: they never retain.
 */
#ifndef RBM_REFS_H
#define RBM_REFS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "ruby_layout.h"
#include "rbmemtrace.h"
#include "u64map.h"

/* Builtin types the decoders tell apart (slots.h names some of them too: the same values). */
#define RB_T_ARRAY 0x07
#define RB_T_HASH 0x08
#define RB_T_STRUCT 0x09
#define RB_T_DATA 0x0c

enum ref_kind {
	REF_CLASS = 1,	  /* RBasic.klass: (class) */
	REF_IVAR_INDEX,	  /* ivar number index of the object; a: its class (3.1) or shape (3.3+) */
	REF_IVAR_ID,	  /* an ivar by name: a = the ID (class iv_tbl, too-complex tables) */
	REF_CONST,	  /* a constant of a class or module: a = the ID's serial */
	REF_ELEM,	  /* an Array element: index */
	REF_HASH_KEY,	  /* index: the entry */
	REF_HASH_VALUE,	  /* index: the entry */
	REF_HASH_DEFAULT, /* the default value or proc (ifnone) */
	REF_MEMBER,	  /* a Struct member: index; a = the struct's class */
	REF_SUPER,	  /* a class's superclass */
	REF_METHOD,	  /* a method table's entry: a = the ID's serial */
	REF_LOCAL,	  /* an env's value: index in env; a = the env's iseq, b = locals */
	REF_OUTER_ENV,	  /* an env's enclosing env */
	REF_BLOCK_ENV,	  /* a Proc's or Binding's env */
	REF_BLOCK_SELF,	  /* a Proc's or Binding's self */
	REF_CODE,	  /* an iseq or ifunc (a block's, a method's) */
	REF_SHARED,	  /* the root a shared Array or String points into */
	REF_FIELD,	  /* a field of an internal object: a = a string naming it */
	REF_DATA_FIELD,	  /* a T_DATA's field marked declaratively: index = its offset */
	REF_THREAD_LOCAL, /* a fiber-local (Thread#[]): a = the ID's serial */
	REF_KINDS,
};

struct ref_label {
	uint8_t kind;
	uint32_t index;
	uint64_t a, b;
};

/* Steps a decoder resumes at, with the bytes it asked for. */
enum refs_step {
	STEP_VALUES = 1,  /* VALUEs labelled by aux's kind (refs_values) */
	STEP_AR_TABLE,	  /* 3.1: the ar_table a Hash points to; aux = bound */
	STEP_ST_HEAD,	  /* an st_table's head; aux = what its entries are */
	STEP_ST_ENTRIES,  /* its entries; aux = what they are */
	STEP_CLASSEXT,	  /* 3.1: rb_classext_t; aux = the class */
	STEP_ID_HEAD,	  /* an rb_id_table's head; aux = what its values are */
	STEP_ID_ITEMS,	  /* its items */
	STEP_CONST_ENTRY, /* an rb_const_entry_t; aux = the constant's serial */
	STEP_BLOCK,	  /* struct rb_block of a Proc or Binding */
	STEP_EP_ENV,	  /* ep[VM_ENV_DATA_INDEX_ENV]: a block's env */
	STEP_ENV_SPECVAL, /* an env's ep[-1] and ep[0]: its outer env, if any */
	STEP_METHOD_DEF,  /* rb_method_definition_t */
	STEP_DATA_FIELDS, /* a T_DATA's struct, marked declaratively; aux = its type */
	STEP_THREAD,	  /* rb_thread_t of a Thread object */
	STEP_PIN_LIST,	  /* 3.4: a pin_array_list {next, len, array} */
	STEP_ARRAY_HEAP,  /* an Array's flags to its heap ptr, read again: it was reallocated */
	/* refs_marked.c: what C mark functions mark, read as data */
	STEP_GENIV_HEAD,    /* 3.1: a gen_ivtbl's numiv; aux = the object's class */
	STEP_GENIV_COMPLEX, /* 3.3+: a too-complex gen_ivtbl's st_table pointer */
	STEP_FIBER,	    /* rb_fiber_t to its saved ec's fields; aux = the data type */
	STEP_FIBER_FRAMES,  /* a fiber's control frames from its cfp up; aux = its vm_stack */
	STEP_QUEUE,	    /* struct rb_queue to que; aux = the data type */
	STEP_QUEUE_ARRAY,   /* que's slot header, checked: a hidden Array */
};

/*
 * What a STEP_VALUES, STEP_ST_* or STEP_ID_* read holds, in aux's low byte;
 * aux >> 8 is an argument (a class, a shape, an iseq, a base index).
 */
enum refs_holds {
	HOLDS_ELEMS = 1,    /* Array elements; arg: the first index */
	HOLDS_IVARS,	    /* ivars by index; arg: the class (3.1) or shape id (3.3+) */
	HOLDS_IVARS_BY_ID,  /* st_table ID -> VALUE: ivars */
	HOLDS_HASH,	    /* st_table VALUE -> VALUE: a Hash */
	HOLDS_MEMBERS,	    /* Struct members; arg: the struct's class */
	HOLDS_CONSTS,	    /* id table of rb_const_entry_t * */
	HOLDS_METHODS,	    /* id table of method entries */
	HOLDS_LOCALS,	    /* an env's values; arg: its iseq (the ep index follows in bits) */
	HOLDS_FIBER_LOCALS, /* id table ID -> VALUE */
	HOLDS_GENIVS,	    /* generic ivars by index; arg: the class (3.1) or shape id (3.3+) */
	HOLDS_STACK,	    /* a fiber's VM stack values */
};

#define REFS_AUX(holds, arg) ((uint64_t) (holds) | ((uint64_t) (arg) << 8))

/*
 * A read is made again when what pointed to its memory changed meanwhile:
 * the tries so far ride in aux's top byte (an arg stays below 2^48).
 */
#define REFS_TRIES_SHIFT 56
#define REFS_MAX_TRIES 8

/*
 * The words that led to a piece (want: their values when it was followed),
 * which the driver reads right before and right after the piece, in the
 * same process_vm_readv: the target runs during a walk, and a table it
 * grows, rebuilds or replaces between the read of its head and the read of
 * its entries leaves the walk reading freed memory, stale or reused.  The
 * bytes are trusted only if every word held its value on both sides: a
 * table swapped out and a new one built at the same address (malloc hands
 * a freed head back at once) cannot pass unseen, as it could between two
 * reads a whole round apart.  Otherwise the decoder reads again from what
 * the words say now.
 */
#define REFS_WITNESSES 3
struct refs_witness {
	uint8_t n; /* words, up to REFS_WITNESSES */
	uint64_t addr[REFS_WITNESSES], want[REFS_WITNESSES];
	uint64_t before[REFS_WITNESSES], after[REFS_WITNESSES]; /* as the driver read them */
	bool read; /* all 2n reads succeeded */
};

/* Whether the piece read between the witness's two reads is the one its words led to. */
static inline bool refs_witness_holds(const struct refs_witness *w)
{
	unsigned int i;

	if (!w->read)
		return false;
	for (i = 0; i < w->n && i < REFS_WITNESSES; i++)
		if (w->before[i] != w->want[i] || w->after[i] != w->want[i])
			return false;
	return true;
}

/* What could not be decoded, by reason: said in the report, never silent. */
enum refs_gap {
	GAP_OPAQUE_DATA, /* T_DATA with a C mark function (a C extension's) */
	GAP_UNREAD,	 /* memory an object points to could not be read */
	GAP_NOT_WALKED,	 /* imemo types and the rest that hold no Ruby-visible objects */
	GAP_KINDS,
};

struct refs_gaps {
	uint64_t n[GAP_KINDS];
};

/*
 * A table or array of any size is read in chunks of at most refs_meta's
 * chunk bytes, one chunk of it at a time: each chunk's resume asks for the
 * next, so a table costs the walk one chunk of buffer however big it is,
 * and its reads stay batched with the round's other pieces.  What rides
 * with a chunk (handed back to refs_resume with it):
 */
struct refs_span {
	uint64_t base;	 /* the address of entry 0 */
	uint64_t next;	 /* the first entry of the chunk after this one */
	uint64_t end;	 /* entries [.., end) are read (an st_table's bound) */
	uint64_t total;	 /* entries the object says it holds */
	uint64_t read;	 /* of them, read by the chunks before this one */
	uint32_t chunks; /* chunks read before this one */
};

/* Why a table was read in part (struct refs_part). */
enum refs_cut_why {
	CUT_UNREADABLE = 1, /* a chunk's memory could not be read */
	CUT_CHANGED,	    /* the table changed between its chunks (rebuilt, grown, replaced) */
	CUT_BOUNDS,	    /* its bounds do not hold: past its capacity, or past a cap */
	CUT_BUDGET,	    /* the walk's read budget was spent */
	CUT_WHYS,
};

/* A table of the object being decoded read in part: said per object, never silent. */
struct refs_part {
	uint8_t holds; /* enum refs_holds: what the table held */
	uint8_t why;   /* enum refs_cut_why */
	uint64_t read, total; /* entries read, of the entries the object says it holds */
};

/* Callbacks of a driver. */
struct refs_sink {
	/* A reference from the object being decoded (value may be a special constant). */
	void (*ref)(void *arg, uint64_t value, const struct ref_label *l);
	/*
	 * Read len bytes at addr, then resume with step and aux; wit (may be
	 * NULL): the words to read on both sides of them; span (may be NULL):
	 * the table a chunk is of; both handed to refs_resume.
	 */
	void (*need)(void *arg, uint64_t addr, uint32_t len, uint8_t step, uint64_t aux,
		     const struct refs_witness *wit, const struct refs_span *span);
	void *arg;
	/* May be NULL: the entries the object says it holds (a Hash's size, an Array's length) */
	void (*size)(void *arg, uint64_t n);
	/* May be NULL: a table of the object read in part */
	void (*part)(void *arg, const struct refs_part *p);
};

/* Kinds of T_DATA by their rb_data_type_t, cached per type. */
enum data_kind {
	DATA_UNKNOWN = 0,
	DATA_OPAQUE,   /* marked by C code: not walked */
	DATA_NONE,     /* marks nothing (no mark function, or known to hold no VALUE) */
	DATA_PROC,     /* rb_proc_t */
	DATA_BINDING,  /* rb_binding_t */
	DATA_THREAD,   /* rb_thread_t */
	DATA_WEAK,     /* WeakMap, WeakKeyMap: never retains */
	DATA_DECL,     /* RUBY_TYPED_DECL_MARKING: a list of VALUE fields (3.3+) */
	DATA_PIN_LIST, /* 3.4: the VM's list of pinned arrays (mark_object_ary) */
	DATA_FIBER,    /* rb_fiber_t: its saved ec's stack (refs_marked.c) */
	DATA_QUEUE,    /* struct rb_queue (Queue, SizedQueue): its que */
};

struct data_type_info {
	enum data_kind kind;
	char name[48];	 /* wrap_struct_name, for the report */
	size_t *offsets; /* DATA_DECL: VALUE fields of the struct */
	size_t noffsets;
	uint32_t struct_len; /* DATA_DECL: bytes to read (up to the last field) */
	uint64_t objects;    /* DATA_OPAQUE: objects of this type met */
};

struct shape_info {
	uint32_t next_iv_index;
	uint8_t type;
	bool read;
};

/* Metadata read synchronously and kept: the same for many objects. */
struct refs_meta {
	pid_t pid;
	const struct ruby_layout *l;
	uint64_t shape_list;		 /* 3.3+: rb_shape_tree_ptr->shape_list; 0: unknown */
	uint64_t libruby_lo, libruby_hi; /* libruby's mapping: core data types live there */
	struct u64map data_types;	 /* rb_data_type_t * -> struct data_type_info * */
	struct u64map shapes;		 /* shape id + 1 -> struct shape_info * */
	struct refs_gaps gaps;
	uint64_t opaque_types; /* distinct opaque data types seen */
	uint64_t stale_reads;  /* pieces read again: what pointed to them changed meanwhile */
	/*
	 * The bytes the decoders may still ask for, when budgeted: a heap walk
	 * sets it (a crafted heap can claim huge tables everywhere), and turns
	 * it off after; a need past it is refused and counted (CAP_WALK_BYTES).
	 */
	bool budgeted;
	uint64_t budget;
	uint32_t chunk; /* bytes one chunk of a table reads: REFS_MAX_READ (tests: less) */
	/*
	 * Where an embedded RTypedData's struct starts: after struct
	 * RTypedData (3.3, the default), over its data pointer from 3.4 on
	 * (rtypeddata.h reuses it), which the layout cannot tell: the version
	 * says (why_run.c).
	 */
	uint32_t tdata_embedded_at;
	/*
	 * Generic ivars (the ivars of objects that are not T_OBJECT): Ruby's
	 * table object -> struct gen_ivtbl *, read whole before the walk
	 * (refs_genivs_load); an object flagged FL_EXIVAR is looked up there.
	 */
	struct u64map genivs;
	bool genivs_read;	  /* the table was read (else no generic ivar is walked) */
	uint64_t genivs_missing;  /* FL_EXIVAR objects met that the table did not hold */
	uint64_t genivs_walked;	  /* objects whose generic ivars were followed */
	uint64_t fibers_walked;	  /* fibers whose stack was read */
	uint64_t fibers_unproved; /* fibers whose saved ec did not point back at them */
};

void refs_meta_init(struct refs_meta *m, pid_t pid, const struct ruby_layout *l);
void refs_meta_free(struct refs_meta *m);
/* The kind of a data type (read once, then cached).  Never NULL. */
struct data_type_info *refs_data_type(struct refs_meta *m, uint64_t type);
/*
 * Reads the generic ivar table whose address the word at tbl_global holds
 * into m->genivs (at most REFS_MAX_GENIVS entries; entries whose key is not
 * an object are skipped).  0, or -errno (nothing walked then).
 */
#define REFS_MAX_GENIVS (1u << 20)
int refs_genivs_load(struct refs_meta *m, uint64_t tbl_global);
/* A shape's ivar count and type (read once, then cached); NULL if unreadable. */
const struct shape_info *refs_shape(struct refs_meta *m, uint32_t shape_id);

/*
 * Decodes the object at addr whose slot (slot_size bytes) is in words: its
 * in-slot references go to sink->ref, its other memory is asked for through
 * sink->need, to be handed to refs_resume.  Free slots, zombies and moved
 * slots reference nothing.
 */
void refs_decode(struct refs_meta *m, uint64_t addr, const uint64_t *words, uint32_t slot_size,
		 const struct refs_sink *sink);
/*
 * Continues a decode with the len bytes of buf that a need asked for (ok:
 * they were read); wit: the need's witness as read around them, or NULL.
 */
void refs_resume(struct refs_meta *m, uint64_t addr, uint8_t step, uint64_t aux, uint64_t from,
		 const void *buf, uint32_t len, bool ok, const struct refs_witness *wit,
		 const struct refs_span *span, const struct refs_sink *sink);

/*
 * Decodes one object now, reading what it needs from the target: every
 * reference with its label, in the order the decoder found them (at most
 * max; *n receives how many).  0, or -errno if its slot cannot be read.
 */
struct ref_out {
	uint64_t value;
	struct ref_label label;
};
int refs_decode_now(struct refs_meta *m, uint64_t addr, uint32_t slot_size, struct ref_out *out,
		    size_t max, size_t *n);
/* The same, with the slot's first two words (flags, klass) from the same read into hdr. */
int refs_decode_now_hdr(struct refs_meta *m, uint64_t addr, uint32_t slot_size,
			struct ref_out *out, size_t max, size_t *n, uint64_t hdr[2]);

/* The longest read a decoder asks for: bigger tables are read in chunks of it. */
#define REFS_MAX_READ (1u << 22)

/* Whether v can be a heap object (not a special constant). */
static inline bool refs_heap_value(uint64_t v)
{
	return v && !(v & 7);
}

#endif
