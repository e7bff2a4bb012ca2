// Messages between the extension host and the chat webview.

import type * as acp from "@agentclientprotocol/sdk";
import type { Item } from "./transcript";

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
      /** Present when the whole transcript is (re)sent. */
      items?: Item[];
    }
  | { type: "item"; item: Item }
  | { type: "usage"; text: string };

export type FromWebview =
  | { type: "ready" }
  | { type: "send"; text: string }
  | { type: "stop" }
  | { type: "newChat" }
  | { type: "sessions" }
  | { type: "setMode"; modeId: string }
  | { type: "setConfig"; configId: string; value: string }
  | { type: "answer"; itemId: string; optionId: string }
  | { type: "openDiff"; itemId: string; index: number }
  | { type: "openFile"; path: string; line?: number };
