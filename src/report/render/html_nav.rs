//! Navigation for big HTML reports: a sticky table of contents, sticky
//! table headers, and a filter by group and test in a few lines of inline
//! JavaScript. With scripts off the filter stays hidden and the page reads
//! as a plain document; nothing is loaded from the network.

use std::fmt::Write as _;

use super::svg::esc;
use crate::report::model::Report;
use crate::report::overview::group_anchor;

/// The CSS the navigation adds to the page's style.
pub(super) const STYLE: &str = r#"
nav.toc{position:sticky;top:0;z-index:5;background:#fff;border-bottom:1px solid #ddd;padding:6px 0;margin-bottom:8px}
nav.toc a{margin-right:12px;white-space:nowrap}nav.toc .sub a{font-size:13px;margin-right:10px}
thead th{position:sticky;top:var(--navh,34px);z-index:2}
table.cost thead tr+tr th{top:calc(var(--navh,34px) + 25px)}[id]{scroll-margin-top:calc(var(--navh,34px) + 8px)}
#filter{margin:4px 0 0;font-size:13px}#filter input[type=search]{width:220px}
table.verdicts td,table.changes td{vertical-align:middle;padding:2px 8px}
table.changes td:not(:last-child){white-space:nowrap}
table.verdicts b,table.verdicts span{white-space:nowrap}h1.many{font-size:19px}.vs{color:#b00}.vf{color:#070}.vn{color:#555}.vu{color:#888}
#summary h2{margin-top:12px}table.cost tbody.t td:first-child{font-weight:600}
table.cost tbody.t tr:first-child td{border-top:2px solid #bbb}
div.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(520px,1fr));gap:0 16px}
@media print{nav.toc{position:static}#filter{display:none}thead th{position:static}}
"#;

/// The table of contents (sections, then the sysbench groups) and the
/// hidden filter form that the script shows.
pub(super) fn toc(o: &mut String, r: &Report) {
    o.push_str(
        "<nav class=\"toc\"><a href=\"#summary\">Summary</a><a href=\"#context\">Context</a>",
    );
    if r.sysbench.is_some() {
        o.push_str("<a href=\"#sysbench\">Sysbench</a>");
    }
    if r.sweep.is_some() {
        o.push_str("<a href=\"#sweep\">Concurrency sweep</a>");
    }
    if r.chain && (r.sysbench.is_some() || r.ibench.is_some()) {
        o.push_str("<a href=\"#chain\">Chain</a>");
    }
    if r.ibench.is_some() {
        o.push_str("<a href=\"#ibench\">Insert Benchmark</a>");
    }
    if r.server.is_some() {
        o.push_str("<a href=\"#server-counters\">Server counters</a>");
    }
    if r.profiles.is_some() {
        o.push_str("<a href=\"#cpu-profiles\">CPU profiles</a>");
    }
    if !r.storage.is_empty() {
        o.push_str("<a href=\"#storage\">Storage</a>");
    }
    if !r.query_plan_changes.is_empty() {
        o.push_str("<a href=\"#plans\">Plan changes</a>");
    }
    if let Some(s) = &r.sysbench {
        o.push_str("<span class=\"sub\">| ");
        for g in &s.groups {
            let _ = write!(
                o,
                "<a href=\"#{}\">{}</a>",
                group_anchor(g.group),
                esc(g.title)
            );
        }
        o.push_str("</span>");
        o.push_str("<form id=\"filter\" hidden onsubmit=\"return false\">Show group: ");
        for g in &s.groups {
            let _ = write!(
                o,
                "<label><input type=\"checkbox\" checked value=\"{}\"> {}</label> ",
                g.group,
                esc(g.title)
            );
        }
        o.push_str(" test: <input type=\"search\" placeholder=\"e.g. points, update\"></form>");
    }
    o.push_str("</nav>\n");
}

/// The filter and the print helper: groups are `div.grp[data-group]`,
/// test rows carry `data-test`. Printing opens every folded block.
pub(super) const SCRIPT: &str = r#"<script>
(function(){
const f=document.getElementById('filter');if(!f)return;f.hidden=false;
const nav=document.querySelector('nav.toc');
const fit=()=>document.documentElement.style.setProperty('--navh',nav.offsetHeight+'px');
fit();window.addEventListener('resize',fit);
function apply(){
  const on=new Set([...f.querySelectorAll('input[type=checkbox]')].filter(c=>c.checked).map(c=>c.value));
  const q=f.querySelector('input[type=search]').value.trim().toLowerCase();
  document.querySelectorAll('div.grp').forEach(g=>{g.hidden=!on.has(g.dataset.group);});
  document.querySelectorAll('[data-test]').forEach(e=>{e.hidden=q!==''&&!e.dataset.test.toLowerCase().includes(q);});
}
f.addEventListener('input',apply);f.addEventListener('change',apply);
})();
window.addEventListener('beforeprint',()=>document.querySelectorAll('details').forEach(d=>d.open=true));
</script>"#;
