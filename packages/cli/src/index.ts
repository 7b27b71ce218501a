export { main } from './main.js';
export { demoCommand, forwardCommand, generateCommand, UsageError } from './commands.js';
export { runGraphDemo, type GraphDemoResult } from './demo-graph.js';
