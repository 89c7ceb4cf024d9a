/**
 * Flattening a client transcript into prompt text. The SDK cannot be given prior history: a send carries
 * only text and images, so earlier turns travel as clearly delimited text.
 */

import type { TurnMessage, TurnTextPart, TurnUserPart, TurnWebSearchPart } from '../turn/turn-request.js';

export type PromptImage = { mediaType: string; data: string };

/** Text of the parts; images are collected into `images` and referenced in the text. */
const partsText = (parts: readonly TurnUserPart[], images: PromptImage[]): string =>
  parts
    .map((part) => {
      if (part.type === 'text') return part.text;
      if (part.source.kind === 'base64') {
        images.push({ mediaType: part.source.mediaType, data: part.source.data });
        return `[image ${images.length} attached]`;
      }
      return `[image: ${part.source.url}]`;
    })
    .join('\n');

export const joinText = (parts: readonly TurnTextPart[]): string => parts.map((part) => part.text).join('\n');

const stringifyInput = (input: unknown): string =>
  typeof input === 'string' ? input : JSON.stringify(input);

/** A hosted web search of an earlier answer: what was searched for, then each source found. */
const webSearchText = (part: TurnWebSearchPart): string => {
  const what =
    part.query !== undefined ? ` query="${part.query}"` : part.url !== undefined ? ` url="${part.url}"` : '';
  const body =
    part.error !== undefined
      ? `failed: ${part.error}`
      : (part.sources ?? [])
          .map((source, index) => {
            const head = `${index + 1}. ${source.title ?? source.url} — ${source.url}`;
            return source.snippet === undefined ? head : `${head}\n   ${source.snippet.replace(/\s+/g, ' ')}`;
          })
          .join('\n');
  return `<web_search${what}>\n${body}\n</web_search>`;
};

/** One transcript entry as delimited text. */
export const messageToText = (message: TurnMessage, images: PromptImage[]): string => {
  switch (message.role) {
    case 'system':
      return `<system_message>\n${joinText(message.content)}\n</system_message>`;
    case 'user':
      return `<user>\n${partsText(message.content, images)}\n</user>`;
    case 'assistant': {
      const lines = message.content.map((part) => {
        switch (part.type) {
          case 'text':
            return part.text;
          case 'reasoning':
            return `<thinking>\n${part.text}\n</thinking>`;
          case 'tool-call':
            return `<tool_call id="${part.toolCallId}" name="${part.toolName}">\n${stringifyInput(part.input)}\n</tool_call>`;
          case 'web-search':
            return webSearchText(part);
          default: {
            const _exhaustive: never = part;
            return _exhaustive;
          }
        }
      });
      return `<assistant>\n${lines.join('\n')}\n</assistant>`;
    }
    case 'tool': {
      const name = message.toolName === undefined ? '' : ` name="${message.toolName}"`;
      const status = message.isError ? ' is_error="true"' : '';
      return `<tool_result id="${message.toolCallId}"${name}${status}>\n${partsText(message.content, images)}\n</tool_result>`;
    }
    default: {
      const _exhaustive: never = message;
      return _exhaustive;
    }
  }
};

export const messagesToText = (messages: readonly TurnMessage[], images: PromptImage[]): string =>
  messages.map((message) => messageToText(message, images)).join('\n\n');
