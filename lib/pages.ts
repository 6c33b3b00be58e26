// listing-limits/pages: the contact page of rule 6 and the operator's page, as Express routers of their own.
export { type AdminPageOptions, type Authorize, limitsAdmin } from './pages/admin.js';
export { limitsRequestPage, type RequestPageOptions } from './pages/contact.js';
export { escapeHtml } from './pages/html.js';
