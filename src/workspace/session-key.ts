/**
 * Session keys name scratch workspaces: 32 lowercase hex characters (128 random bits). Removal code
 * only ever deletes a directory whose name passes {@link isSessionKey}, so nothing else under the
 * workspace root (or a user-supplied `cursorCwd`) can match by accident.
 */

import { randomBytes } from 'node:crypto';

const sessionKeyPattern = /^[0-9a-f]{32}$/;

/** A fresh random session key. */
export const createSessionKey = (): string => randomBytes(16).toString('hex');

/** Whether `value` has the session-key shape (exactly 32 characters of `0-9a-f`). */
export const isSessionKey = (value: string): boolean => sessionKeyPattern.test(value);
