"""The course's runs: each module runs one story on a backend and returns a Timeline, with the one
function that puts the run into words. Import the one you use (`from emqlab.scenarios.heartbeat
import heartbeat`): nothing here loads a scenario before it is asked for."""
