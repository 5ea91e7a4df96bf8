// The report's stylesheet, inline in every report (no file is fetched); see html_report.h.
#include "reports/html_report.h"

namespace sweep::reports {
namespace {

constexpr const char* kStyle = R"css(
:root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--bg:#f6f8fa;--card:#fff;--accent:#1a7f37;--warn:#bc4c00;--bad:#cf222e}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1200px;margin:0 auto;padding:24px 28px 40px}
header h1{font-size:26px;margin:2px 0 4px}
.eyebrow{margin:0;color:var(--muted);text-transform:uppercase;letter-spacing:.06em;font-size:12px}
.sub{margin:0;color:var(--muted)}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:16px 20px;margin:16px 0}
h2{font-size:18px;margin:0 0 10px}
h3{font-size:14px;margin:0 0 6px;color:var(--muted);font-weight:600}
.key{white-space:nowrap}
code,.key{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;font-size:12.5px}
.headline{border-left:5px solid var(--accent)}
.rec{font-size:17px;margin:0 0 12px}
.rec strong{font-size:19px}
.factors{display:flex;flex-wrap:wrap;align-items:center;gap:10px;margin:8px 0 12px}
.factor{border:1px solid var(--line);border-radius:8px;padding:8px 14px;min-width:170px;background:#fbfcfd}
.factor .v{font-size:28px;font-weight:700;line-height:1.1;font-variant-numeric:tabular-nums}
.factor .l{color:var(--muted);font-size:12.5px}
.factor.total{border-color:var(--accent);background:#eef8f0}
.factor.total .v{color:var(--accent)}
.factor.total.slower{border-color:var(--warn);background:#fff8f0}
.factor.total.slower .v{color:var(--warn)}
.op{font-size:24px;color:var(--muted)}
.basis{margin:4px 0;color:var(--fg)}
.note{color:var(--muted);font-size:13px}
table{border-collapse:collapse;width:100%;font-size:12.5px;font-variant-numeric:tabular-nums}
th,td{padding:4px 6px;border-bottom:1px solid #eaeef2;text-align:left;white-space:nowrap}
th{background:#f6f8fa;font-weight:600;position:sticky;top:0;white-space:normal;vertical-align:bottom;min-width:3.5em}
td.n,th.n{text-align:right}
td.why{white-space:normal;overflow-wrap:anywhere}
tbody tr:nth-child(even){background:#fafbfc}
tr.recommended td{background:#eef8f0}
tr.baseline td{background:#f3f4f6}
.table-wrap{overflow-x:auto;max-width:100%}
td.config{white-space:normal;overflow-wrap:anywhere;min-width:12em}
.badge{display:inline-block;padding:0 6px;border-radius:9px;font-size:11.5px;border:1px solid transparent}
.s-completed{background:#dafbe1;color:#116329}
.s-running{background:#ddf4ff;color:#0550ae}
.s-queued{background:#f6f8fa;color:#59636e;border-color:#d1d9e0}
.s-cancelled{background:#fff8c5;color:#7d4e00}
.s-failed{background:#ffebe9;color:#a40e26}
.s-dropped{background:#f6f8fa;color:#8c959f}
.tag{display:inline-block;padding:0 5px;border-radius:4px;font-size:10.5px;color:#fff;background:var(--accent)}
.tag.base{background:#24292f}
details summary{cursor:pointer;color:#0550ae;margin:8px 0}
.grid2{display:grid;grid-template-columns:repeat(auto-fit,minmax(460px,1fr));gap:14px}
.grid3{display:grid;grid-template-columns:repeat(auto-fit,minmax(330px,1fr));gap:12px}
figure{margin:0}
figcaption{font-weight:600;font-size:13px;margin-bottom:2px}
svg.chart{width:100%;height:auto;display:block;font:11px system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif}
svg .grid{stroke:#eaeef2}
svg .axis{stroke:#8c959f}
svg .tick{fill:#59636e}
svg .axis-label{fill:#1f2328;font-weight:600}
svg .reference{stroke:#1a7f37;stroke-dasharray:4 3}
svg .reference-label{fill:#1a7f37;font-weight:600}
svg .median{stroke:#1f2328;stroke-width:2}
svg .bar-label{fill:#1f2328}
svg .bar-value{fill:#59636e}
.legend{display:flex;flex-wrap:wrap;gap:4px 16px;margin:8px 0 0;padding:0;list-style:none;font-size:12.5px}
.legend li{display:flex;align-items:center;gap:6px}
.sw{display:inline-block;width:18px;height:3px;border-radius:2px}
.sw.dash{background:repeating-linear-gradient(90deg,#24292f 0 5px,transparent 5px 8px)!important}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(230px,1fr));gap:12px;margin-bottom:12px}
.card{border:1px solid var(--line);border-radius:8px;padding:10px 14px}
.card .v{font-size:24px;font-weight:700;font-variant-numeric:tabular-nums}
.card .l{color:var(--muted);font-size:12.5px}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;margin:0}
dl.meta dt{color:var(--muted)}
dl.meta dd{margin:0;overflow-wrap:anywhere}
ul.defs{margin:6px 0 0;padding-left:18px;color:var(--muted);font-size:13px}
/* Narrow windows (900 px and up): less padding, the tables' cells fold onto more lines, and the
   columns the printed page also leaves off (steps, queue time: in trials.csv) are left off, rather
   than cutting off the last columns. */
@media (max-width:1100px){
  main{padding:16px 12px 32px}
  section{padding:12px 12px}
  th,td{padding:3px 4px;white-space:normal}
  table{font-size:12px}
  th{min-width:0;overflow-wrap:anywhere}
  .np{display:none}
  td .key,td.config{overflow-wrap:anywhere}
  .key{white-space:normal}
  .factor{min-width:140px}
}
@page{size:A4;margin:12mm}
@media print{
  *{-webkit-print-color-adjust:exact;print-color-adjust:exact}
  body{background:#fff;font-size:10pt}
  main{max-width:none;padding:0}
  section{border:none;border-top:1px solid var(--line);border-radius:0;padding:10px 0;margin:8px 0}
  .headline{border-left:none;border-top:3px solid var(--accent)}
  figure,.card,.factors,.headline,tr{break-inside:avoid}
  h2{break-after:avoid}
  .grid2{grid-template-columns:1fr 1fr}
  .grid3{grid-template-columns:1fr 1fr 1fr}
  th{position:static}
  table{font-size:7.5pt}
  th,td{padding:2px 3px;white-space:normal}
  .table-wrap{overflow:visible}
  .np{display:none}
  details summary{color:var(--muted)}
}
)css";

}  // namespace

const char* ReportStyle() { return kStyle; }

}  // namespace sweep::reports
