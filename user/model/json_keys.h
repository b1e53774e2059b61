/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Every member name of rbmemtrace's JSON, declared once: the writers
 * (output/) and the reader (model/json_read.c) both name members JK(name),
 * and docs/json-schema.json describes each (tests/e2e/test_docs.rb checks
 * that every key here is in the schema, and the schema names no other).
 * One per line, sorted: two branches adding keys merge without a fight.
 */
#ifndef RBM_JSON_KEYS_H
#define RBM_JSON_KEYS_H

// clang-format off
#define JSON_KEYS(X) \
	X(age_buckets) \
	X(alloc_sites) \
	X(allocated) \
	X(allocs_per_s) \
	X(at_exit) \
	X(base) \
	X(budget_percent) \
	X(burst_windows) \
	X(by_all_retained) \
	X(by_class) \
	X(bytes) \
	X(capped_by_census) \
	X(cause) \
	X(census_ms) \
	X(change) \
	X(check_ms) \
	X(class) \
	X(class_name_cut) \
	X(class_overflow) \
	X(classes) \
	X(code_moved) \
	X(command) \
	X(compacted) \
	X(compaction) \
	X(confidence) \
	X(conservative_only) \
	X(conservative_roots) \
	X(container) \
	X(count) \
	X(covered) \
	X(diff) \
	X(dominated_bytes) \
	X(dominated_objects) \
	X(dominators_seconds) \
	X(doubt) \
	X(dropped) \
	X(duration_s) \
	X(edges) \
	X(edges_cut) \
	X(end_read_while_compacting) \
	X(end_reason) \
	X(entries_read) \
	X(entries_total) \
	X(errors) \
	X(est_allocated) \
	X(est_freed) \
	X(est_period_allocated) \
	X(est_retained) \
	X(est_source) \
	X(estimate_rough) \
	X(estimated) \
	X(estimated_overhead_percent) \
	X(exit_status) \
	X(failed_hosts) \
	X(figures) \
	X(followed) \
	X(fraction) \
	X(frame) \
	X(frame_text_cut) \
	X(frames) \
	X(free) \
	X(freed) \
	X(from) \
	X(frozen) \
	X(garbage) \
	X(garbage_types) \
	X(gc_count) \
	X(gc_ran) \
	X(gc_runs) \
	X(gc_stat) \
	X(gcs_per_s) \
	X(gone) \
	X(grew) \
	X(groups) \
	X(head) \
	X(header_read_errors) \
	X(heads) \
	X(heap) \
	X(heap_end) \
	X(heap_seconds) \
	X(heap_start) \
	X(holder) \
	X(host) \
	X(ended) \
	X(form) \
	X(in_heap) \
	X(in_heap_young) \
	X(insertions) \
	X(missed) \
	X(moves) \
	X(interval_s) \
	X(kind) \
	X(label) \
	X(layout) \
	X(libruby) \
	X(limits_reached) \
	X(line) \
	X(line_table_skipped) \
	X(live) \
	X(live_change) \
	X(live_end) \
	X(live_start) \
	X(marking) \
	X(max_overhead_percent) \
	X(missing) \
	X(moved_over) \
	X(moved_objects) \
	X(moves_left_out) \
	X(moves_unknown) \
	X(name) \
	X(new) \
	X(new_alive) \
	X(new_bytes) \
	X(new_objects) \
	X(new_old) \
	X(new_retained) \
	X(new_unaged) \
	X(no_site) \
	X(none) \
	X(not_followed) \
	X(note) \
	X(not_walked) \
	X(ns_pid) \
	X(number) \
	X(objects) \
	X(old) \
	X(old_retained) \
	X(opaque_data) \
	X(owner_search_cut) \
	X(pages) \
	X(path) \
	X(path_too_long) \
	X(paths) \
	X(paused_ms) \
	X(per_min) \
	X(period) \
	X(period_allocated) \
	X(pid) \
	X(probe_hits) \
	X(processes) \
	X(proved) \
	X(rbmemtrace_version) \
	X(reached) \
	X(read_in_part) \
	X(reads) \
	X(reason) \
	X(rechecked) \
	X(retained) \
	X(retained_ages) \
	X(retainer) \
	X(root) \
	X(roots) \
	X(roots_cut) \
	X(rows) \
	X(rows_left_out) \
	X(rss_bytes) \
	X(ruby_version) \
	X(same_process) \
	X(sample) \
	X(sampling) \
	X(scale) \
	X(scan_failures) \
	X(seconds) \
	X(selection) \
	X(site) \
	X(sites) \
	X(size_after) \
	X(size_before) \
	X(slots) \
	X(small_points) \
	X(sort) \
	X(source) \
	X(stack_drops) \
	X(stacks) \
	X(stale) \
	X(state) \
	X(summary) \
	X(summed) \
	X(suspects) \
	X(sweeping) \
	X(table) \
	X(table_read_cut) \
	X(tables) \
	X(target_exited) \
	X(targets) \
	X(time) \
	X(total_allocated_objects) \
	X(total_freed_objects) \
	X(totals) \
	X(traced) \
	X(tracer_bytes) \
	X(trend) \
	X(truncated) \
	X(types) \
	X(unattributed) \
	X(unexplained) \
	X(unjudged) \
	X(unread) \
	X(untraced) \
	X(untracked) \
	X(uptime_s) \
	X(verdict) \
	X(verdict_walk) \
	X(via) \
	X(vm_lists_grew) \
	X(walk) \
	X(walk_read_budget) \
	X(why) \
	X(window_s) \
	X(windows) \
	X(young) \
	X(container_id) \
	X(pod_uid) \
	X(pod_name) \
	X(pod_namespace) \
	X(born)
// clang-format on

enum json_key {
#define JSON_KEY_ENUM(k) JK_##k,
	JSON_KEYS(JSON_KEY_ENUM)
#undef JSON_KEY_ENUM
	    JSON_KEY_COUNT
};

extern const char *const json_key_names[JSON_KEY_COUNT];

/* The member name of key k: JK(pid) is "pid". */
#define JK(k) (json_key_names[JK_##k])

#endif
