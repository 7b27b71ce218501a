export { demoCommand, forwardCommand, generateCommand, UsageError } from './commands.js';
export { type GraphDemoResult, runGraphDemo } from './demo-graph.js';
export { main } from './main.js';
