// The parts of @openai/agents that the SDK integration tests use, bundled for the browser by
// tests/browser/sdk-bundle.mjs into tests/.build/agents-sdk.js.
export {
  Agent,
  run,
  tool,
  handoff,
  RunState,
  OpenAIResponsesCompactionSession,
  MemorySession,
  OutputGuardrailTripwireTriggered,
} from '@openai/agents';
export { ScriptedModel, assistantMessage, functionCall } from '@openai/agents/testing';
export { z } from 'zod';
