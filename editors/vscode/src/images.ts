// Images in prompts: what the chat view accepts and how a prompt carries
// them. Free of VS Code and of the DOM, so the view, the extension host and
// the unit tests share the same rules.

/** The formats bridle takes (it checks them against the bytes too). */
export const imageTypes: Readonly<Record<string, string>> = {
  "image/png": "PNG",
  "image/jpeg": "JPEG",
  "image/gif": "GIF",
  "image/webp": "WebP",
};

/** bridle's limit for one image (the smallest of the providers' limits). */
export const maxImageBytes = 5 << 20;

/** An image attached to a prompt: ACP's image block without its tag. */
export interface PromptImage {
  mimeType: string;
  /** The bytes, base64. */
  data: string;
  /** The file name, for the thumbnail's tooltip; not sent to bridle. */
  name?: string;
}

/** A size in MB, never rounded down to the limit: 5 MB and a byte is "5.01 MB". */
function size(n: number): string {
  return `${(Math.ceil((n / (1 << 20)) * 100) / 100).toFixed(2)} MB`;
}

/**
 * Why a file cannot go with a prompt, or undefined when it can. `name`,
 * `type` and `size` are a File's (the view checks before reading it).
 */
export function checkImage(f: { name?: string; type: string; size: number }): string | undefined {
  const what = f.name ? `"${f.name}"` : "The pasted item";
  if (!(f.type in imageTypes)) {
    return `${what} cannot be attached: ${f.type ? `${f.type} is` : "its type is"} not an image bridle takes (PNG, JPEG, GIF or WebP).`;
  }
  if (f.size > maxImageBytes) return `${what} is ${size(f.size)}, over bridle's limit of 5 MB for an image: attach a smaller one.`;
  if (f.size === 0) return `${what} is empty.`;
  return undefined;
}

/** The bytes a base64 string holds. */
export function base64Bytes(data: string): number {
  const pad = data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0;
  return Math.floor((data.length * 3) / 4) - pad;
}

/** Checks an image as it arrives from the view, by its type and decoded size. */
export function checkPromptImage(img: PromptImage): string | undefined {
  return checkImage({ name: img.name, type: img.mimeType, size: base64Bytes(img.data) });
}

export type PromptBlock = { type: "text"; text: string } | { type: "image"; mimeType: string; data: string };

/** session/prompt's content: the text (when there is any), then each image. */
export function promptBlocks(text: string, images: readonly PromptImage[] = []): PromptBlock[] {
  const out: PromptBlock[] = [];
  if (text) out.push({ type: "text", text });
  for (const i of images) out.push({ type: "image", mimeType: i.mimeType, data: i.data });
  return out;
}

/**
 * bridle replays a prompt as its text, in which each image is a line
 * "[image MIME]", followed by the images still stored. When an image comes
 * back, its line goes: the thumbnail shows it.
 */
export function dropImagePlaceholder(text: string, mimeType: string): string {
  const line = `[image ${mimeType}]`;
  if (text === line) return "";
  if (text.startsWith(line + "\n")) return text.slice(line.length + 1);
  const i = text.indexOf("\n" + line);
  if (i >= 0 && (i + 1 + line.length === text.length || text[i + 1 + line.length] === "\n")) {
    return text.slice(0, i) + text.slice(i + 1 + line.length);
  }
  return text;
}
