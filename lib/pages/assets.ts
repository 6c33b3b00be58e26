// The pages' style sheet and script: static files served by each router, so that the CSP allows no inline code.
import type { Request, Response } from 'express';

const CSS = `*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1b1b1b;background:#f6f7f9}
main{max-width:60rem;margin:0 auto;padding:1rem}
h1{font-size:1.6rem;margin:.5rem 0 1rem}h2{font-size:1.25rem;margin:1.5rem 0 .5rem}
section,form.card{background:#fff;border:1px solid #d8dbe0;border-radius:8px;padding:1rem;margin:0 0 1rem}
fieldset{border:1px solid #d8dbe0;border-radius:6px;margin:0 0 1rem;padding:.5rem 1rem 1rem}
legend{font-weight:600;padding:0 .25rem}
label{display:block;font-weight:600;margin:.75rem 0 .25rem}
label.choice{display:inline-flex;gap:.4rem;align-items:center;font-weight:400;margin:.25rem 1rem .25rem 0}
#ask:not(:has([value=multiplier]:checked)) [data-when-ask=multiplier],
#ask:not(:has([value=endpoints]:checked)) [data-when-ask=endpoints],
#kind:not(:has([value=bot]:checked)) [data-when-kind=bot],
#kind:not(:has([value=server]:checked)) [data-when-kind=server]{display:none}
input[type=text],input[type=password],input[type=number],input[type=url],input[type=email],select,textarea{
width:100%;max-width:36rem;padding:.5rem;border:1px solid #8a9099;border-radius:4px;font:inherit}
textarea{min-height:6rem;display:block}
input:focus,select:focus,textarea:focus,button:focus,a:focus{outline:3px solid #2f6fdb;outline-offset:1px}
button{font:inherit;padding:.5rem 1rem;border-radius:4px;border:1px solid #1f4fa8;background:#2f6fdb;color:#fff;
cursor:pointer;margin:.5rem .5rem 0 0}
button.danger{background:#b3261e;border-color:#8c1d18}button.plain{background:#fff;color:#1f4fa8}
.hint{color:#4a4f57;font-size:.9rem;margin:.25rem 0}
.error{color:#b3261e;font-weight:600;margin:.25rem 0}
[aria-invalid=true]{border-color:#b3261e!important;border-width:2px!important}
.notice{border-left:4px solid #2f6fdb;background:#eaf1fd;padding:.75rem 1rem;margin:0 0 1rem}
.alert{border-left:4px solid #b3261e;background:#fdecea;padding:.75rem 1rem;margin:0 0 1rem}
.rows{display:grid;grid-template-columns:minmax(0,1fr) 8rem;gap:.25rem .75rem;align-items:center;max-width:36rem}
.rows label{margin:0;font-weight:400}
table{border-collapse:collapse;width:100%;font-size:.95rem}
th,td{text-align:left;padding:.4rem;border-bottom:1px solid #e3e5e8;vertical-align:top}
.table{overflow-x:auto}
code,.key{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.85rem;word-break:break-all}
.inline{display:flex;flex-wrap:wrap;gap:.5rem;align-items:flex-end}.inline label{margin:0}
.inline input,.inline select{width:auto}
.bar{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:center;justify-content:space-between;background:#fff;
border:1px solid #d8dbe0;border-radius:8px;padding:.5rem 1rem;margin:0 0 1rem}
.bar nav{display:flex;flex-wrap:wrap;gap:.25rem 1.25rem}.account{display:flex;flex-wrap:wrap;gap:.5rem}
.account button{margin:0}.who{margin:0;align-self:center}
a[aria-current]{font-weight:700;color:#1b1b1b}a.client{white-space:nowrap}
form[role=search]{margin:0 0 1rem}
.chart{overflow-x:auto}.chart svg{display:block;width:100%;min-width:54rem;height:auto}
@media (max-width:40rem){main{padding:.5rem}th,td{padding:.3rem}.rows{grid-template-columns:minmax(0,1fr) 6rem}}
`;

/** Asks before an action that cannot be undone. */
const JS = `'use strict';
(function () {
  document.querySelectorAll('form[data-confirm]').forEach(function (form) {
    form.addEventListener('submit', function (event) {
      if (!window.confirm(form.getAttribute('data-confirm'))) event.preventDefault();
    });
  });
})();
`;

function serve(body: string, type: string) {
  return (_req: Request, res: Response) => {
    res.setHeader('Content-Type', type);
    res.setHeader('Cache-Control', 'public, max-age=3600');
    res.end(body);
  };
}

export const serveCss = serve(CSS, 'text/css; charset=utf-8');
export const serveJs = serve(JS, 'text/javascript; charset=utf-8');
