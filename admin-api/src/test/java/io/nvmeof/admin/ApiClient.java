package io.nvmeof.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

/** The admin API through a real HTTP client, with the token, as the tests use it. */
final class ApiClient {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final HttpClient http = HttpClient.newHttpClient();
    private final AdminServer admin;
    private final String token;

    ApiClient(AdminServer admin, String token) {
        this.admin = admin;
        this.token = token;
    }

    /** A request with the token and, when {@code body} is not null, a JSON body. */
    HttpResponse<String> call(String method, String path, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + admin.port() + path))
                .header("Authorization", "Bearer " + token)
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofString(body));
        if (body != null) {
            b.header("Content-Type", "application/json");
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    static JsonNode json(HttpResponse<String> r) throws Exception {
        return JSON.readTree(r.body());
    }

    /** Asserts a problem+json answer with this status whose detail has {@code detailContains}; returns the problem. */
    static JsonNode problem(HttpResponse<String> r, int status, String detailContains) throws Exception {
        assertEquals(status, r.statusCode(), r.body());
        assertEquals(Problems.PROBLEM_JSON, r.headers().firstValue("Content-Type").orElse(""));
        JsonNode p = json(r);
        assertEquals(status, p.get("status").asInt());
        assertTrue(p.get("detail").asText().contains(detailContains), p.get("detail").asText());
        return p;
    }
}
