/**
 * The outcome every fleet test asserts first: every conversation ended, each turn got the answer its
 * model builds from the tool results it received (so a lost result shows as a wrong answer), and every
 * step ran exactly once on its client.
 */

import { expect } from 'vitest';
import { expectedAnswers } from './fleet-clients.js';
import type { FleetRun } from './fleet-restart.js';

export const expectEveryConversationRight = ({ outcomes, plans }: FleetRun): void => {
  const failures = outcomes.flatMap((outcome, index) =>
    outcome.status === 'rejected' ? [`${plans[index]?.conversation}: ${String(outcome.reason)}`] : [],
  );
  expect(failures).toEqual([]);
  for (const outcome of outcomes) {
    if (outcome.status !== 'fulfilled') continue;
    const { plan } = outcome.value;
    expect(outcome.value.answers, plan.conversation).toEqual(expectedAnswers(plan));
    const executions = [...outcome.value.executions.values()];
    expect(executions, plan.conversation).toEqual(Array.from({ length: plan.turns * plan.steps }, () => 1));
  }
};
