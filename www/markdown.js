// Model answers are Markdown: this turns one into DOM nodes that are safe to put in the page.
// markdown-it parses it with raw HTML turned off, so HTML in an answer shows as text; DOMPurify
// then keeps only the elements Markdown itself makes, with no attribute that could run script or
// load anything, and links only to http(s) and mailto URLs, opening in a new tab without access
// to this page.
import { MarkdownIt, DOMPurify } from './vendor/markdown.js';

const md = new MarkdownIt({ html: false, linkify: true, breaks: true });

// Images are not shown, only their alt text ("[image: alt]"). Showing one would make the browser
// fetch its URL as soon as the answer is on screen: a beacon that tells a server the answer was
// read, carrying whatever the model (or a prompt injection) put in the URL. The page loads
// nothing from the network on its own, and images in answers are no exception.
md.renderer.rules.image = (tokens, idx, options, env, self) => {
  const alt = self.renderInlineAsText(tokens[idx].children, options, env).trim();
  return md.utils.escapeHtml(alt ? `[image: ${alt}]` : '[image]');
};

// A link to anything but http(s) or mailto (javascript:, data:, a relative URL) stays text.
const LINK = /^(?:https?|mailto):/i;
md.validateLink = (url) => LINK.test(url.trim());

const purify = DOMPurify(window);
const SANITIZE = {
  ALLOWED_TAGS: [
    'p', 'br', 'hr', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'blockquote', 'ul', 'ol', 'li', 'pre',
    'code', 'em', 'strong', 's', 'a', 'table', 'thead', 'tbody', 'tr', 'th', 'td',
  ],
  ALLOWED_ATTR: ['href', 'title', 'start'],
  // `start` (an ordered list's first number) is not a URL; every other allowed attribute must be
  // one of these.
  ADD_URI_SAFE_ATTR: ['start'],
  ALLOWED_URI_REGEXP: LINK,
  RETURN_DOM_FRAGMENT: true,
};
purify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName !== 'A') return;
  // markdown-it keeps a refused link as <a href="">, which would still be a link (to this page).
  if (!LINK.test(node.getAttribute('href') ?? '')) {
    node.removeAttribute('href');
    return;
  }
  node.setAttribute('target', '_blank');
  node.setAttribute('rel', 'noopener noreferrer');
});

/** `text` (Markdown) as a sanitised DocumentFragment. */
export function renderMarkdown(text) {
  return purify.sanitize(md.render(text).trim(), SANITIZE);
}
