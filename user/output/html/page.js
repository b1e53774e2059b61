// The HTML report's script (user/output/html.c embeds it).  It reads the page's data
// (html_data.c) and builds the page with createElement, textContent and setAttribute only:
// every string from the target arrives already shown visibly (controls, bidi) and is never
// parsed as HTML.  No library, no network.
'use strict';
(function () {
  const D = JSON.parse(document.getElementById('rbm-data').textContent);
  const SVG = 'http://www.w3.org/2000/svg';
  const main = document.body;

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function sv(tag, attrs, text) {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function add(parent, child) { parent.appendChild(child); return child; }
  function num(n) { return n === undefined || n === null ? '' : Number(n).toLocaleString('en-US'); }
  function bytes(b) {
    const u = ['B', 'KB', 'MB', 'GB', 'TB'];
    let i = 0, v = Number(b);
    while (Math.abs(v) >= 1024 && i < u.length - 1) { v /= 1024; i++; }
    return (i ? v.toFixed(1) : String(v)) + ' ' + u[i];
  }
  function signed(n, f) { return (n > 0 ? '+' : '') + (f || num)(n); }
  function section(title) { add(main, el('h2', {}, title)); return main; }
  function note(text) { return add(main, el('p', { class: 'note' }, text)); }

  function header() {
    const f = D.facts || {};
    const what = { report: 'trace report', period: 'period of a continuous trace',
      merge: 'merged reports', why: 'who holds what (why)', diff: 'two reports compared' };
    document.title = 'rbmemtrace: ' + (what[D.kind] || D.kind) +
      (f.command ? ' of ' + f.command : '');
    add(main, el('h1', {}, 'rbmemtrace ' + (what[D.kind] || D.kind)));
    const parts = [];
    if (D.last_period) parts.push(D.processes + ' periods of one process: the last one drawn');
    else if (D.processes > 1) parts.push(D.processes + ' reports merged');
    else if (f.pid) parts.push('pid ' + f.pid + (f.command ? ' (' + f.command + ')' : ''));
    if (f.host) parts.push('host ' + f.host);
    if (f.ruby_version) parts.push('Ruby ' + f.ruby_version);
    if (f.duration_s) parts.push(f.duration_s + ' s');
    if (f.period !== undefined) parts.push('period ' + f.period);
    if (f.retained !== undefined) parts.push(num(f.retained) + ' retained of ' +
      num(f.allocated) + ' allocated' + (f.sampled ? ' (estimates: sampled)' : ''));
    if (f.heap_live) parts.push('heap: ' + num(f.heap_live) + ' live, ' + bytes(f.heap_bytes));
    if (f.selection) parts.push('selection: ' + f.selection);
    add(main, el('p', { class: 'facts' }, parts.join(' · ')));
  }

  function holderPath(p) {
    let s = p.root_kind + ' ' + p.root;
    for (const e of p.edges) s += ' > ' + e[0] + ' ' + e[1];
    return s + (p.edges_cut ? ' (middle of a longer path left out)' : '');
  }

  function verdict() {
    const v = D.verdict;
    if (!v) return;
    section('Leak verdict: what keeps alive more than at the start');
    if (v.none) { note('No verdict: ' + v.none); return; }
    if (!v.points.length) {
      add(main, el('p', {}, 'No old container gathered new objects over the ' + v.seconds +
        ' s between the two walks.'));
      return;
    }
    v.points.forEach(function (p, i) {
      const box = add(main, el('div', { class: 'verdict' }));
      add(box, el('div', {}, '#' + (i + 1) + ' ' + p.container + ' grew by ' +
        signed(p.grew_objects) + ' objects (' + signed(p.grew_bytes, bytes) + '); keeps alive ' +
        bytes(p.dominated_bytes) + ' (dominated_bytes) in ' + num(p.dominated_objects) +
        ' objects' + (p.size_after >= 0 ? '; entries ' + (p.size_before >= 0 ?
        num(p.size_before) : '?') + ' → ' + num(p.size_after) : '')));
      add(box, el('div', { class: 'holder' }, 'held by ' + holderPath(p)));
      if (p.by_class.length)
        add(box, el('div', {}, 'gathered: ' + p.by_class.map(function (c) {
          return c[0] + ' ' + num(c[1]) + ' (' + bytes(c[2]) + ')';
        }).join(', ')));
    });
  }

  function suspects() {
    if (!D.suspects || !D.suspects.length) return;
    section('Leak suspects: old retained objects of classes whose live count grew');
    const ul = add(main, el('ul'));
    for (const s of D.suspects) {
      const li = add(ul, el('li', { class: 'suspect' }));
      add(li, el('b', {}, s.class));
      add(li, document.createTextNode(' ' + num(s.old_retained) + ' old retained (' +
        bytes(s.bytes) + ')' + (s.live_change !== undefined ? ', live ' +
        signed(s.live_change) : '') + (s.site_path ? ', allocated at ' + s.site_path + ':' +
        s.site_line : '')));
      if (s.holder)
        add(li, el('div', { class: 'holder' }, 'held by ' + s.holder_kind + ' ' + s.holder +
          ' (' + num(s.holder_count) + ' objects)'));
    }
  }

  // A table sorted by a click on a column's header (again: the other way).
  function table(columns, rows, id) {
    const t = el('table', { id: id });
    const head = add(add(t, el('thead')), el('tr'));
    const body = add(t, el('tbody'));
    function fill() {
      body.textContent = '';
      for (const r of rows) {
        const tr = add(body, el('tr'));
        for (const c of columns) {
          const v = c.get(r);
          const td = add(tr, el('td', { class: c.name ? 'name' : '' }, c.show ? c.show(v) : v));
          if (c.sign && v) td.setAttribute('class', v > 0 ? 'up' : 'down');
        }
      }
    }
    columns.forEach(function (c) {
      const th = add(head, el('th', { class: c.name ? 'name' : '' }, c.title));
      th.addEventListener('click', function () {
        const down = th.getAttribute('aria-sort') !== 'descending';
        for (const o of head.children) o.removeAttribute('aria-sort');
        th.setAttribute('aria-sort', down ? 'descending' : 'ascending');
        rows.sort(function (a, b) {
          const x = c.get(a), y = c.get(b);
          const r = typeof x === 'string' ? String(x).localeCompare(y) : (x || 0) - (y || 0);
          return down ? -r : r;
        });
        fill();
      });
    });
    fill();
    return t;
  }

  function classes() {
    if (!D.classes || !D.classes.length) return;
    section('Classes');
    const cols = [{ title: 'class', name: true, get: function (r) { return r.name; } }];
    const keys = D.kind === 'why'
      ? [['live', 'live'], ['bytes', 'bytes'], ['unexplained', 'unexplained'], ['paths', 'paths']]
      : [['retained', 'retained'], ['allocated', 'allocated'], ['freed', 'freed'],
        ['live', 'live (census)'], ['bytes', 'bytes (census)'], ['change', 'live change'],
        ['period_allocated', 'allocated in period']];
    for (const k of keys) {
      if (!D.classes.some(function (r) { return r[k[0]] !== undefined; })) continue;
      cols.push({ title: k[1], get: function (r) { return r[k[0]]; },
        show: k[0] === 'bytes' ? bytes : k[0] === 'change' ? signed : num, sign: k[0] === 'change' });
    }
    add(main, table(cols, D.classes.slice(), 'classes'));
    if (D.classes_left_out) note(num(D.classes_left_out) + ' more classes left out of the page.');
  }

  // The icicle: call paths merged from the root, each frame as wide as what it holds.
  function icicle() {
    const T = D.tree;
    if (!T) return;
    section('Icicle: ' + T.what);
    const root = { name: 'all', o: 0, b: 0, kids: new Map(), up: null };
    function put(path, o, b) {
      let n = root;
      n.o += o; n.b += b;
      for (const i of path) {
        const name = typeof i === 'number' ? T.names[i] : i;
        let k = n.kids.get(name);
        if (!k) { k = { name: name, o: 0, b: 0, kids: new Map(), up: n }; n.kids.set(name, k); }
        k.o += o; k.b += b; n = k;
      }
    }
    for (const p of T.paths) put(p.slice(2), p[0], p[1]);
    const lo = T.left_out;
    if (lo && lo.paths) put(['(' + num(lo.paths) + ' more call paths, left out of the page)'],
      lo.objects, lo.bytes);
    if (lo && lo.paths)
      note('The page holds the ' + num(T.paths.length) + ' call paths that hold most; ' +
        num(lo.paths) + ' more (' + num(lo.objects) + ' objects, ' + bytes(lo.bytes) +
        ') are one frame.');
    const ctl = add(main, el('div', { class: 'controls' }));
    let measure = 'o', focus = root, query = '';
    for (const m of [['o', 'objects'], ['b', 'bytes']]) {
      const lab = add(ctl, el('label'));
      const r = add(lab, el('input', { type: 'radio', name: 'measure', id: 'measure-' + m[1] }));
      r.checked = m[0] === 'o';
      r.addEventListener('change', function () { measure = m[0]; draw(); });
      add(lab, document.createTextNode(' ' + m[1]));
    }
    const search = add(ctl, el('input', { type: 'search', id: 'search',
      placeholder: 'search frames' }));
    const reset = add(ctl, el('button', { id: 'reset' }, 'reset zoom'));
    const status = add(ctl, el('span', { id: 'search-status' }));
    const crumbs = add(main, el('div', { class: 'crumbs', id: 'crumbs' }));
    const svg = add(main, sv('svg', { class: 'icicle', id: 'icicle' }));
    search.addEventListener('input', function () { query = search.value; draw(); });
    reset.addEventListener('click', function () { focus = root; draw(); });
    const W = 1200, H = 18;
    function color(name) {
      let h = 0;
      for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
      return 'hsl(' + (10 + h % 40) + ',' + (60 + h % 30) + '%,' + (55 + h % 15) + '%)';
    }
    function draw() {
      svg.textContent = '';
      const total = focus[measure] || 1;
      let rows = 0, matched = 0;
      function frame(n, x, w, depth) {
        if (w < 0.5) return;
        rows = Math.max(rows, depth + 1);
        const hit = query && n.name.indexOf(query) >= 0;
        const g = add(svg, sv('g', { class: 'frame' + (hit ? ' match' : query ? ' dim' : '') }));
        g.setAttribute('data-name', n.name);
        add(g, sv('title', {}, n.name + '\n' + num(n.o) + ' objects, ' + bytes(n.b)));
        add(g, sv('rect', { x: x.toFixed(2), y: depth * H, width: w.toFixed(2), height: H - 1,
          fill: color(n.name) }));
        const chars = Math.floor((w - 6) / 6.6);
        if (chars >= 3)
          add(g, sv('text', { x: (x + 3).toFixed(2), y: depth * H + 13 },
            n.name.length > chars ? n.name.slice(0, chars - 1) + '…' : n.name));
        g.addEventListener('click', function () { focus = n; draw(); });
        if (hit) matched += n[measure];
        let cx = x;
        const kids = Array.from(n.kids.values()).sort(function (a, b) {
          return b[measure] - a[measure];
        });
        for (const k of kids) { const kw = w * k[measure] / (n[measure] || 1); frame(k, cx, kw, depth + 1); cx += kw; }
      }
      frame(focus, 0, W, 0);
      svg.setAttribute('viewBox', '0 0 ' + W + ' ' + rows * H);
      svg.setAttribute('height', rows * H);
      svg.setAttribute('data-focus', focus.name);
      const path = [];
      for (let n = focus; n; n = n.up) path.unshift(n.name);
      crumbs.textContent = 'zoomed on: ' + path.join(' > ') + ' (' + num(focus.o) +
        ' objects, ' + bytes(focus.b) + ')';
      status.textContent = query ? 'matches hold ' + (100 * Math.min(matched, total) /
        total).toFixed(1) + '% of the ' + (measure === 'o' ? 'objects' : 'bytes') + ' shown' : '';
    }
    draw();
  }

  // A line chart of some named series over n periods, the range [a, b] shaded; returns a
  // function that moves the range.  attr names each line's data attribute (for tests).
  function chart(id, lines, n, fmt, attr, title) {
    add(main, el('div', { class: 'facts' }, title));
    const svg = add(main, sv('svg', { class: 'chart', id: id, viewBox: '0 0 1000 300' }));
    const legend = add(main, el('div', { class: 'legend' }));
    const max = Math.max(1, ...lines.map(function (l) { return Math.max(...l.values); }));
    const x = function (k) { return 80 + 900 * (n > 1 ? k / (n - 1) : 0); };
    const y = function (v) { return 280 - 260 * v / max; };
    add(svg, sv('line', { class: 'axis', x1: 80, y1: 280, x2: 980, y2: 280 }));
    add(svg, sv('line', { class: 'axis', x1: 80, y1: 20, x2: 80, y2: 280 }));
    add(svg, sv('text', { x: 2, y: 24 }, fmt(max)));
    add(svg, sv('text', { x: 2, y: 284 }, fmt(0)));
    const range = add(svg, sv('rect', { class: 'range', y: 20, height: 260 }));
    lines.forEach(function (l, i) {
      const col = 'hsl(' + (i * 47 % 360) + ',70%,45%)';
      const pl = add(svg, sv('polyline', { fill: 'none', stroke: col, 'stroke-width': 2,
        points: l.values.map(function (v, k) { return x(k) + ',' + y(v); }).join(' ') }));
      pl.setAttribute(attr, l.name);
      add(pl, sv('title', {}, l.name));
      const sp = add(legend, el('span'));
      add(sp, el('i', { style: 'background:' + col }));
      add(sp, document.createTextNode(l.name + ' ' + l.note));
    });
    return function (a, b) {
      range.setAttribute('x', x(a));
      range.setAttribute('width', Math.max(2, x(b) - x(a)));
    };
  }

  // The verdict's holders of a series, each a line of what it keeps alive per period.
  function holderLines(s, n) {
    const by = new Map();
    for (const h of s.holders) {
      const name = h.root + (h.edges.length ? ' > ' + h.edges.join(' > ') : '');
      if (!by.has(name)) by.set(name, { name: name, values: new Array(n).fill(0) });
      by.get(name).values[h.period] = h.dominated_bytes;
    }
    return Array.from(by.values()).map(function (l) {
      l.note = bytes(l.values[n - 1]);
      return l;
    }).sort(function (p, q) { return q.values[n - 1] - p.values[n - 1]; }).slice(0, 8);
  }

  function rangeTables(holder, s, a, b, label) {
    holder.textContent = '';
    add(holder, el('p', {}, 'Change of each class\'s live objects (the censuses\') from ' +
      label(a) + ' to ' + label(b) + ':'));
    const rows = s.classes.map(function (c) {
      return { name: c.name, d: c.live[b] - c.live[a], db: c.bytes[b] - c.bytes[a], at: c.live[b] };
    }).filter(function (r) { return r.d || r.db; });
    rows.sort(function (p, q) { return q.d - p.d; });
    add(holder, table([
      { title: 'class', name: true, get: function (r) { return r.name; } },
      { title: 'live change', get: function (r) { return r.d; }, show: signed, sign: true },
      { title: 'bytes change', get: function (r) { return r.db; }, show: function (v) { return signed(v, bytes); }, sign: true },
      { title: 'live at the end', get: function (r) { return r.at; }, show: num }], rows, 'range-table'));
    if (rows.length < s.classes.length)
      add(holder, el('p', { class: 'note' }, num(s.classes.length - rows.length) +
        ' classes without a change not shown.'));
    const hs = s.holders.filter(function (h) { return h.period >= a && h.period <= b; });
    if (hs.length)
      add(holder, table([
        { title: 'period', get: function (h) { return s.numbers[h.period]; } },
        { title: 'holder', name: true, get: function (h) { return h.root + ' ' + h.edges.join(' > '); } },
        { title: 'keeps alive (dominated_bytes)', get: function (h) { return h.dominated_bytes; }, show: bytes },
        { title: 'grew (objects)', get: function (h) { return h.grew_objects; }, show: signed }],
      hs, 'holders-table'));
  }

  // Birth cohorts: per class, the objects allocated in periods a to b (by the periods' numbers)
  // still alive at the end of period c: the sum of c's [birth period, live] pairs in the range.
  function cohortTable(holder, s, a, b, c, label) {
    holder.textContent = '';
    const lo = s.numbers[a], hi = s.numbers[b];
    add(holder, el('p', { id: 'cohort-title' }, 'Allocated from the start of period ' + lo +
      ' to the end of ' + label(b) + ', still alive at the end of ' + label(c) + ':'));
    const rows = s.classes.filter(function (cl) { return cl.born; }).map(function (cl) {
      let n = 0;
      for (const pair of cl.born[c]) if (pair[0] >= lo && pair[0] <= hi) n += pair[1];
      return { name: cl.name, n: n, live: cl.live[c] };
    }).filter(function (r) { return r.n; });
    rows.sort(function (p, q) { return q.n - p.n; });
    add(holder, table([
      { title: 'class', name: true, get: function (r) { return r.name; } },
      { title: 'allocated then, alive', get: function (r) { return r.n; }, show: num },
      { title: 'live then', get: function (r) { return r.live; }, show: num }], rows, 'cohort-table'));
    if (c < b)
      add(holder, el('p', { class: 'note' }, 'The end chosen is before the range\'s: only ' +
        'what was allocated by then is counted.'));
    if (!rows.length) add(holder, el('p', { class: 'note' }, 'None.'));
    if (s.born_left_out)
      add(holder, el('p', { class: 'note' }, num(s.born_left_out) + ' classes with fewer live ' +
        'objects left out of this table: their births would take the page past its size.'));
  }

  // A series of periods: each class's live objects, each holder's dominated bytes, by period.
  function series() {
    if (!D.series || !D.series.length) return;
    for (const s of D.series) {
      section('Over time: pid ' + s.pid + (s.command ? ' (' + s.command + ')' : '') + ', ' +
        s.times.length + ' periods');
      const n = s.times.length;
      const label = function (k) {
        return 'period ' + s.numbers[k] + ' (' + new Date(s.times[k] * 1000).toISOString()
          .slice(11, 19) + ' UTC)';
      };
      const ctl = add(main, el('div', { class: 'controls' }));
      const pick = function (id, at) {
        const sel = add(ctl, el('select', { id: id }));
        for (let k = 0; k < n; k++) add(sel, el('option', { value: k }, label(k)));
        sel.value = at;
        return sel;
      };
      add(ctl, el('span', {}, 'from'));
      const t0 = pick('t0', 0);
      add(ctl, el('span', {}, 'to'));
      const t1 = pick('t1', n - 1);
      let t2 = null;
      if (s.cohorts) {
        add(ctl, el('span', {}, 'still alive at'));
        t2 = pick('t2', n - 1);
      }
      const growth = function (c) { return c.live[n - 1] - c.live[0]; };
      const top = s.classes.slice().sort(function (a, b) { return growth(b) - growth(a); })
        .slice(0, 8).map(function (c) { return { name: c.name, values: c.live, note: signed(growth(c)) }; });
      const moves = [chart('series-chart', top, n, num, 'data-class',
        'Live objects at each period\'s end (the census), the 8 classes that grew most:')];
      const hl = holderLines(s, n);
      if (hl.length)
        moves.push(chart('holders-chart', hl, n, bytes, 'data-holder',
          'What the leak verdict\'s holders keep alive (dominated_bytes) at each period\'s end:'));
      const cohorts = t2 ? add(main, el('div')) : null;
      const holder = add(main, el('div'));
      function update() {
        let a = Number(t0.value), b = Number(t1.value);
        if (a > b) { const t = a; a = b; b = t; }
        for (const m of moves) m(a, b);
        if (cohorts) cohortTable(cohorts, s, a, b, Number(t2.value), label);
        rangeTables(holder, s, a, b, label);
      }
      for (const sel of [t0, t1, t2]) if (sel) sel.addEventListener('change', update);
      update();
      if (!t2)
        note('"Allocated between t0 and t1 and still alive at t2" needs the periods\' birth ' +
          'cohorts (classes[].born), which these reports do not carry (written with ' +
          '--no-why, or by an older rbmemtrace): the charts show what is live at each ' +
          'period\'s end.');
    }
  }

  function diff() {
    const d = D.diff;
    if (!d) return;
    add(main, el('p', { class: 'facts' }, 'base: ' + d.base));
    add(main, el('p', { class: 'facts' }, 'new: ' + d.new));
    if (!d.same_process) note('Two processes, or merged reports: compared by names.');
    if (d.estimated) note('A sampled report: retained figures are estimates.');
    d.tables.forEach(function (t, ti) {
      section(t.name[0].toUpperCase() + t.name.slice(1) + ', largest change of ' +
        t.figures[0] + ' first');
      const cols = [{ title: t.name, name: true, get: function (r) { return r.name; } },
        { title: t.figures[0] + ' (base)', get: function (r) { return r.base[0]; }, show: num },
        { title: t.figures[0] + ' (new)', get: function (r) { return r.new[0]; }, show: num }];
      for (let k = 0; k < 3; k++)
        cols.push({ title: t.figures[k] + ' change', get: function (r) { return r.change[k]; },
          show: signed, sign: true });
      const changed = t.rows.filter(function (r) { return r.change.some(function (c) { return c; }); });
      add(main, table(cols, changed, 'diff-' + ti));
      if (changed.length < t.rows.length)
        note(num(t.rows.length - changed.length) + ' rows without a change not shown.');
      if (t.rows_left_out) note(num(t.rows_left_out) + ' more rows left out of the page.');
    });
  }

  header();
  diff();
  verdict();
  suspects();
  series();
  icicle();
  classes();
  document.body.setAttribute('data-ready', '1');
})();
