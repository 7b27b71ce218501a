export { forwardCommand, generateCommand, UsageError } from './commands.js';
export { type GraphDemoResult, runGraphDemo } from './demo-graph.js';
export { type InspectCommandOptions, inspectCommand } from './inspect-command.js';
export { type MainIo, main } from './main.js';
export { type PromptOptions, preprocessCommand, type RunCommandOptions, readVideoFrames, runCommand, userMessage } from './run.js';
