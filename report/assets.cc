#include "report/assets.h"

namespace lockcheck {
namespace report {

const char* const kPageCss = R"CSS(
:root{--fg:#1d2330;--muted:#5b6475;--line:#d9dde5;--red:#d11f1f;--green:#1e8a4c;--amber:#b7791f}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--fg);background:#f3f4f7}
main{max-width:1260px;margin:0 auto;padding:12px 18px 40px}
section{background:#fff;border:1px solid var(--line);border-radius:8px;padding:14px 18px;margin:12px 0;overflow-x:auto}
h1{font-size:15px;margin:0 0 6px;font-weight:600;color:var(--muted)}
h2{font-size:17px;margin:0 0 10px}
h3{font-size:15px;margin:16px 0 6px}
a{color:#2856c8}
.verdict{font-size:60px;font-weight:800;letter-spacing:.03em;line-height:1.05;margin:2px 0 6px}
.verdict-valid{color:var(--green)}.verdict-invalid{color:var(--red)}.verdict-unknown{color:var(--amber)}
.pill{display:inline-block;padding:0 8px;border-radius:10px;font-size:12px;font-weight:700;color:#fff;text-transform:uppercase}
.pill.valid{background:var(--green)}.pill.invalid{background:var(--red)}.pill.unknown{background:var(--amber)}
.meta{color:var(--muted)}
.run-error{color:var(--red)}
table{border-collapse:collapse}
td,th{padding:3px 10px 3px 0;border-bottom:1px solid #eceef2;text-align:left;vertical-align:top}
th{font-weight:600;color:var(--muted);font-size:12.5px}
table.config th{width:170px}
.mono,code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
pre.cmd{background:#f2f4f7;padding:8px 10px;border-radius:6px;white-space:pre-wrap;word-break:break-all;margin:4px 0 10px}
ol.anomalies{padding-left:24px;margin:8px 0}
ol.anomalies li{margin:4px 0}
.kind{display:inline-block;font-size:12px;font-weight:600;color:var(--red);border:1px solid #f0b4b4;border-radius:4px;padding:0 5px;margin-right:6px}
.kind.note{color:var(--muted);border-color:var(--line)}
table.coverage td.never{color:var(--muted)}
.first-anomaly{margin:6px 0}
button{font:inherit;font-size:12.5px;padding:2px 9px;border:1px solid #b9c0cc;border-radius:5px;background:#f7f8fa;cursor:pointer}
button:hover{background:#e9edf3}
.toolbar{display:flex;gap:6px;align-items:center;flex-wrap:wrap;margin-bottom:6px}
.toolbar .range{color:var(--muted);margin-left:8px}
.legend-row{font-size:12.5px;color:var(--muted);margin:2px 0 6px}
.legend-row .sw{display:inline-block;width:14px;height:10px;margin:0 4px 0 12px;vertical-align:middle;border-radius:2px}
.note{color:var(--muted);font-size:12.5px;margin:4px 0}
svg{display:block}
svg.timeline,svg.plot{max-width:100%;height:auto}
svg text{font:11px system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif;fill:#3a4150}
.row-label,.lane-label,.y-label,.y-unit{text-anchor:end;fill:#5b6475}
.fault-label{font-size:10.5px;fill:#1d2330}
.axis line{stroke:#8a91a0;stroke-width:1}
.axis text{text-anchor:middle;fill:#5b6475}
.axis .axis-unit{text-anchor:end;fill:#8a91a0}
.axis line.grid{stroke:#e6e8ec}
.axis text.y-label,.axis text.y-unit{text-anchor:end}
.lane-bg{fill:#fbfcfd}.lane-bg.odd{fill:#f0f2f5}
.ov-bg{fill:#e9ecf1}.ov-band{opacity:.6}.ov-violation{fill:var(--red)}
.ov-window{fill:rgba(30,40,70,.10);stroke:#1d2330;stroke-width:1.5;vector-effect:non-scaling-stroke}
.tl-overview{cursor:pointer}
.band{opacity:.17}.band-strip{opacity:.85}
.lease{opacity:.27}
.bar{opacity:.95}.bar.agg{opacity:.7}
.bar.maybe{opacity:.4;stroke:#1d2330;stroke-width:1;stroke-dasharray:3 2;vector-effect:non-scaling-stroke}
.overrun{fill:#6b1414;opacity:.8}.notice{fill:#d01fd6;stroke:#fff;stroke-width:1px;vector-effect:non-scaling-stroke}
.violation{fill:rgba(209,31,31,.13);stroke:var(--red);stroke-width:2.5;vector-effect:non-scaling-stroke}
.violation-mark{fill:var(--red)}
.tl-lanes{cursor:crosshair}
.tl-sel{fill:rgba(40,86,200,.12);stroke:#2856c8;stroke-width:1}
.plot-bg{fill:#fbfcfd}.plot-band{opacity:.17}
.pt-ok{fill:#3b6fb6;opacity:.8}.pt-fail{fill:#e08a1e}.pt-info{stroke:var(--red);stroke-width:1.4;fill:none}
.sw-ok{fill:#3b6fb6}.sw-fail{fill:#e08a1e}.sw-info{fill:var(--red)}.sw-lost{fill:#8e2c8e}
.tp-ok,.tp-fail,.tp-info,.lost-line{fill:none;stroke-width:1.5}
.tp-ok{stroke:#3b6fb6}.tp-fail{stroke:#e08a1e}.tp-info{stroke:var(--red)}.lost-line{stroke:#8e2c8e;stroke-width:2}
.plot-empty{text-anchor:middle;fill:#8a91a0}
table.ops{width:100%}
table.ops td{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px;padding:1px 12px 1px 0;white-space:nowrap}
table.ops td.value,table.ops td.error{white-space:normal;overflow-wrap:anywhere;min-width:8em}
table.ops details summary{cursor:pointer;color:var(--muted)}
table.ops details code{display:block;white-space:pre-wrap;overflow-wrap:anywhere}
table.ops tr.hl td{background:#fde6e6;font-weight:700}
table.ops tr.other td{color:#9aa1ae}
table.ops tr.gap td{color:#9aa1ae;text-align:center}
table.ops td.t-ok{color:var(--green)}table.ops td.t-fail{color:#b86a00}table.ops td.t-info{color:var(--red)}
#tip{position:fixed;pointer-events:none;background:#1d2330;color:#fff;font-size:12px;line-height:1.35;padding:5px 8px;border-radius:5px;max-width:520px;display:none;z-index:10}
footer{color:var(--muted);font-size:12px;text-align:center;margin-top:18px}
span.met{color:var(--green)}span.missed{color:var(--red)}
table.list,table.entries,table.changes,table.nights{width:100%}
table.list td.valid,table.list td.met{color:var(--green);font-weight:700}
table.list td.invalid,table.list td.missed{color:var(--red);font-weight:700}
table.list td.unknown,table.list td.unreadable{color:var(--amber);font-weight:700}
table.entries tr.met td:first-child{border-left:4px solid var(--green);padding-left:6px}
table.entries tr.missed td:first-child{border-left:4px solid var(--red);padding-left:6px}
table.entries td,table.changes td{overflow-wrap:anywhere}
table.entries td.name,table.list td.name{overflow-wrap:normal;white-space:nowrap}
table.changes tr.worse td{background:#fdecec}
.grid-wrap{overflow-x:auto}
table.grid td.cell{width:24px;min-width:24px;text-align:center;font-size:10.5px;padding:2px 0;border:1px solid #fff;color:#1d2330}
table.grid td.cell.dark{color:#fff}
table.grid td.cell.unmet{outline:2px solid var(--red);outline-offset:-2px}
table.grid th.night{font-size:11px;writing-mode:vertical-rl;transform:rotate(180deg);padding:2px}
table.grid th.entry{max-width:300px;overflow-wrap:anywhere;padding-right:8px;font-size:12px}
)CSS";

// No "</" sequence may appear in this script (it is inlined in a <script> element).
const char* const kReportJs = R"JS(
(function () {
  var body = document.body;
  window.onerror = function (msg) { body.setAttribute('data-js-error', String(msg)); };
  var NS = 'http://www.w3.org/2000/svg';
  function el(name, attrs) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    return e;
  }
  function niceStep(range, target) {
    var raw = range / target, p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  }
  function setupTimeline(tl) {
    var L = +tl.getAttribute('data-left'), P = +tl.getAttribute('data-plotw');
    var span = +tl.getAttribute('data-span-ms');
    var zoomables = tl.querySelectorAll('svg.zoomable');
    var texts = tl.querySelectorAll('.tl-text');
    var win = document.getElementById('tl-window');
    var axis = document.getElementById('tl-axis');
    var axisY = +axis.getAttribute('data-y');
    var rangeLabel = document.getElementById('tl-range');
    var lanes = tl.querySelector('svg.tl-lanes');
    var sel = document.getElementById('tl-sel');
    var v0 = 0, v1 = span, minWidth = Math.max(span / 1e6, 0.001);
    function decimals(stepS) { return stepS >= 1 ? 0 : stepS >= 0.1 ? 1 : stepS >= 0.01 ? 2 : stepS >= 0.001 ? 3 : 4; }
    function drawAxis() {
      while (axis.firstChild) axis.removeChild(axis.firstChild);
      axis.appendChild(el('line', {x1: L, y1: axisY, x2: L + P, y2: axisY}));
      var a = v0 / 1000, b = v1 / 1000, step = niceStep(b - a, 10), d = decimals(step);
      for (var t = Math.ceil(a / step) * step; t <= b + step * 1e-9; t += step) {
        var x = L + (t - a) / (b - a) * P;
        axis.appendChild(el('line', {x1: x, y1: axisY, x2: x, y2: axisY + 5}));
        var tx = el('text', {x: x, y: axisY + 17});
        tx.textContent = t.toFixed(d);
        axis.appendChild(tx);
      }
      var u = el('text', {x: L + P, y: axisY + 28, 'class': 'axis-unit'});
      u.textContent = 'seconds since start';
      axis.appendChild(u);
    }
    function setView(a, b) {
      if (!(b - a >= minWidth)) { var c = (a + b) / 2; a = c - minWidth / 2; b = c + minWidth / 2; }
      if (b - a > span) { a = 0; b = span; }
      if (a < 0) { b -= a; a = 0; }
      if (b > span) { a -= b - span; b = span; }
      v0 = a; v1 = b;
      for (var i = 0; i < zoomables.length; i++) {
        var z = zoomables[i], h = z.viewBox.baseVal.height;
        z.setAttribute('viewBox', a + ' 0 ' + (b - a) + ' ' + h);
      }
      for (var j = 0; j < texts.length; j++) {
        var t = texts[j], ta = +t.getAttribute('data-a'), tb = +(t.getAttribute('data-b') || ta);
        if (tb < a || ta > b) { t.style.display = 'none'; continue; }
        // A label shows only where its band is wide enough for it (about 6 px a character).
        var room = (Math.min(tb, b) - Math.max(ta, a)) / (b - a) * P;
        if (t.hasAttribute('data-b') && room < 6 * t.textContent.length + 4) { t.style.display = 'none'; continue; }
        t.style.display = '';
        t.setAttribute('x', L + (Math.max(ta, a) - a) / (b - a) * P + 2);
      }
      if (win) { win.setAttribute('x', a); win.setAttribute('width', b - a); }
      drawAxis();
      if (rangeLabel) rangeLabel.textContent = 'showing ' + (a / 1000).toFixed(3) + ' s to ' + (b / 1000).toFixed(3) + ' s of ' + (span / 1000).toFixed(3) + ' s';
    }
    function zoom(f) { var c = (v0 + v1) / 2, w = (v1 - v0) * f; setView(c - w / 2, c + w / 2); }
    function pan(f) { var w = v1 - v0; setView(v0 + w * f, v1 + w * f); }
    function timeAt(clientX) {
      var r = tl.getBoundingClientRect(), scale = r.width / tl.viewBox.baseVal.width;
      var x = (clientX - r.left) / scale;
      return v0 + (x - L) / P * (v1 - v0);
    }
    function svgX(clientX) {
      var r = tl.getBoundingClientRect();
      return (clientX - r.left) / (r.width / tl.viewBox.baseVal.width);
    }
    var dragFrom = null;
    lanes.addEventListener('mousedown', function (e) { dragFrom = e.clientX; e.preventDefault(); });
    window.addEventListener('mousemove', function (e) {
      if (dragFrom === null) return;
      var x0 = Math.max(L, Math.min(svgX(dragFrom), svgX(e.clientX))), x1 = Math.min(L + P, Math.max(svgX(dragFrom), svgX(e.clientX)));
      sel.setAttribute('x', x0); sel.setAttribute('width', Math.max(0, x1 - x0));
    });
    window.addEventListener('mouseup', function (e) {
      if (dragFrom === null) return;
      var a = timeAt(dragFrom), b = timeAt(e.clientX);
      if (Math.abs(e.clientX - dragFrom) > 4) setView(Math.min(a, b), Math.max(a, b));
      dragFrom = null; sel.setAttribute('width', 0);
    });
    var ov = tl.querySelector('svg.tl-overview');
    if (ov) ov.addEventListener('click', function (e) {
      var r = tl.getBoundingClientRect(), scale = r.width / tl.viewBox.baseVal.width;
      var t = ((e.clientX - r.left) / scale - L) / P * span, w = v1 - v0;
      setView(t - w / 2, t + w / 2);
    });
    document.addEventListener('click', function (e) {
      var b = e.target.closest ? e.target.closest('[data-zoom],[data-view-a]') : null;
      if (!b) return;
      var z = b.getAttribute('data-zoom');
      if (b.hasAttribute('data-view-a')) {
        setView(+b.getAttribute('data-view-a'), +b.getAttribute('data-view-b'));
        if (b.hasAttribute('data-scroll')) tl.scrollIntoView({block: 'center'});
      } else if (z === 'all') setView(0, span);
      else if (z === 'in') zoom(0.5);
      else if (z === 'out') zoom(2);
      else if (z === 'left') pan(-0.5);
      else if (z === 'right') pan(0.5);
    });
    if (tl.hasAttribute('data-init-a')) setView(+tl.getAttribute('data-init-a'), +tl.getAttribute('data-init-b'));
    else setView(0, span);
  }
  function setupTooltips() {
    var tip = document.getElementById('tip');
    if (!tip) return;
    document.addEventListener('mouseover', function (e) {
      var t = e.target.closest ? e.target.closest('[data-tip]') : null;
      if (!t) { tip.style.display = 'none'; return; }
      tip.textContent = t.getAttribute('data-tip');
      tip.style.display = 'block';
    });
    document.addEventListener('mousemove', function (e) {
      if (tip.style.display !== 'block') return;
      var x = e.clientX + 14, y = e.clientY + 14;
      if (x + tip.offsetWidth > window.innerWidth - 4) x = e.clientX - tip.offsetWidth - 10;
      if (y + tip.offsetHeight > window.innerHeight - 4) y = e.clientY - tip.offsetHeight - 10;
      tip.style.left = x + 'px'; tip.style.top = y + 'px';
    });
  }
  try {
    var tl = document.getElementById('timeline');
    if (tl) setupTimeline(tl);
    setupTooltips();
    // Time from navigation start to a laid-out page (reading a box forces style and layout).
    body.getBoundingClientRect();
    if (window.performance) body.setAttribute('data-ready-ms', String(Math.round(performance.now())));
    body.setAttribute('data-js-ok', '1');
  } catch (err) {
    body.setAttribute('data-js-error', String(err && err.message ? err.message : err));
  }
})();
)JS";

}  // namespace report
}  // namespace lockcheck
