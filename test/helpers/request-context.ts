/**
 * The SDK's answer to the fake backend's `requestContextArgs` exec: the workspace context Cursor's server
 * builds its prompt from (the rules it loaded, the workspace paths, the hooks it configured).
 */

import { z } from 'zod';
import type { JsonObject } from '../fakes/cursor-backend/client-message.js';

const contextSchema = z.looseObject({
  requestContextResult: z.looseObject({
    success: z.looseObject({
      requestContext: z.looseObject({
        rules: z.array(z.looseObject({ fullPath: z.string(), content: z.string() })).default([]),
        env: z.looseObject({ workspacePaths: z.array(z.string()) }),
        hooksConfig: z.looseObject({ configuredSteps: z.array(z.string()) }).optional(),
      }),
    }),
  }),
});

/** The request context in an answer to `requestContextArgs` (throws when it is not one). */
export const requestContextOf = (answer: JsonObject) =>
  contextSchema.parse(answer).requestContextResult.success.requestContext;
