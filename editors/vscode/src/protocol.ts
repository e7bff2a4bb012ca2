// Messages between the extension host and the chat webview.

import type * as acp from "@agentclientprotocol/sdk";
import type { Item } from "./transcript";
import type { PromptImage } from "./images";

export type ToWebview =
  | {
      type: "state";
      sessionId?: string;
      /** The session's title, when it has one. */
      title?: string;
      /** The workspace folder: tool cards show paths relative to it. */
      root: string;
      running: boolean;
      modes?: acp.SessionModeState;
      configOptions: acp.SessionConfigOption[];
      commands: acp.AvailableCommand[];
      usage?: string;
      /**
       * Whether prompts may carry images (bridle's initialize answered
       * promptCapabilities.image); undefined while bridle is not connected.
       */
      images?: boolean;
      /** Present when the whole transcript is (re)sent. */
      items?: Item[];
    }
  | { type: "item"; item: Item }
  | { type: "usage"; text: string }
  /** A prompt bridle refused: its text and images go back to the input, to edit and send again. */
  | { type: "draft"; text: string; images: PromptImage[] };

export type FromWebview =
  | { type: "ready" }
  | { type: "send"; text: string; images?: PromptImage[] }
  | { type: "stop" }
  | { type: "newChat" }
  | { type: "sessions" }
  | { type: "setMode"; modeId: string }
  | { type: "setConfig"; configId: string; value: string }
  | { type: "answer"; itemId: string; optionId: string }
  | { type: "openDiff"; itemId: string; index: number }
  | { type: "openFile"; path: string; line?: number }
  /** "Rewind to here" on a user message: confirm, then /rewind N. */
  | { type: "rewind"; itemId: string };
