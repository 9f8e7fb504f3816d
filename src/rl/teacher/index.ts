export { teacherLogprobs, type TeacherAnswer, type TeacherEndpoint } from './client.js';
export { TeacherHandler, TEACHER_JOB } from './handler.js';
